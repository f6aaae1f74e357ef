// The Debian packages a command needs, installed when we can (root with apt):
// `npm test` installs test/debian-packages.txt, `npm run lab` packages/lab/debian-packages.txt.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const log = (message) => process.stderr.write(`[bmaas] ${message}\n`);

/** The package names of a list file: one a line, `#` comments. */
export function readPackageList(list) {
  return readFileSync(list, 'utf8')
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean);
}

function installed(name) {
  try {
    return execFileSync('dpkg-query', ['-W', `-f=\${Status}`, name], { encoding: 'utf8', stdio: 'pipe' }).includes(
      'install ok installed',
    );
  } catch {
    return false;
  }
}

/**
 * Installs what is missing from `list`; without root or apt it says what it
 * did not install and `consequence` (what will not work), and carries on.
 */
export function ensureDebianPackages(list, consequence) {
  if (!existsSync(list)) return;
  const missing = readPackageList(list).filter((name) => !installed(name));
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    log(`not installing ${missing.join(' ')} (needs root and apt): ${consequence}`);
    return;
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const result = spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    stdio: 'inherit',
    env,
  });
  if (result.status !== 0) log(`apt-get install failed: ${consequence}`);
}
