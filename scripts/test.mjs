#!/usr/bin/env node
// `npm test`: the formatter and linter, then every test (unit, integration,
// CLI compatibility and end-to-end boots), then one summary line.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDebianPackages } from './debian-packages.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const log = (message) => process.stderr.write(`[bmaas] ${message}\n`);

function step(name, argv) {
  log(name);
  const result = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: 'inherit' });
  return result.status === 0;
}

ensureDebianPackages(join(root, 'test', 'debian-packages.txt'), 'the tests that need them will be skipped');
// Again, now that the compiler may have just been installed: the sendfile tests need the module.
if (
  !step('native module (sendfile)', [
    process.execPath,
    join(root, 'packages', 'sendfile', 'scripts', 'build-native.mjs'),
  ])
) {
  process.exit(1);
}
if (!step('format and lint (biome)', [bin('biome'), 'check', '.'])) process.exit(1);
// The packages are type-checked by the build (tsc -b); the test suites, which vitest runs
// with their types stripped, are checked here, each with its own tsconfig.
const testSuites = readdirSync(join(root, 'test'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, 'test', entry.name, 'tsconfig.json')))
  .map((entry) => entry.name);
for (const suite of testSuites) {
  if (!step(`type check (test/${suite})`, [bin('tsc'), '-p', join(root, 'test', suite, 'tsconfig.json')])) {
    process.exit(1);
  }
}

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
