#!/usr/bin/env node
// `npm test`: the formatter and linter, then every test (unit, integration,
// CLI compatibility and end-to-end boots), then one summary line.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const log = (message) => process.stderr.write(`[bmaas] ${message}\n`);

/** Debian packages the CLI and end-to-end tests need, installed when we can (root with apt). */
function ensureDebianPackages() {
  const list = join(root, 'test', 'debian-packages.txt');
  if (!existsSync(list)) return;
  const wanted = readFileSync(list, 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean);
  const missing = wanted.filter((name) => {
    try {
      return !execFileSync('dpkg-query', ['-W', `-f=\${Status}`, name], { encoding: 'utf8', stdio: 'pipe' }).includes(
        'install ok installed',
      );
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    log(`not installing ${missing.join(' ')} (needs root and apt): the tests that need them will be skipped`);
    return;
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const result = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    stdio: 'inherit',
    env,
  });
  if (result.status !== 0) log('apt-get install failed: the tests that need those packages will be skipped');
}

function step(name, argv) {
  log(name);
  const result = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: 'inherit' });
  return result.status === 0;
}

ensureDebianPackages();
if (!step('format and lint (biome)', [bin('biome'), 'check', '.'])) process.exit(1);

const resultsDir = join(root, '.state');
mkdirSync(resultsDir, { recursive: true });
const resultsFile = join(resultsDir, 'test-results.json');
rmSync(resultsFile, { force: true });
const vitestExitedCleanly = step('tests (vitest)', [
  bin('vitest'),
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${resultsFile}`,
  ...process.argv.slice(2),
]);

// vitest's exit status alone is not trusted (with the JSON reporter it has
// exited 0 on failures): the report must also say every suite and test passed.
let ok = false;
if (existsSync(resultsFile)) {
  const results = JSON.parse(readFileSync(resultsFile, 'utf8'));
  const skipped = results.numPendingTests + results.numTodoTests;
  ok =
    vitestExitedCleanly &&
    results.success === true &&
    results.numFailedTests === 0 &&
    results.numFailedTestSuites === 0;
  process.stdout.write(
    `\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
  );
}
process.exit(ok ? 0 : 1);
