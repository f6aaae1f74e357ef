#!/usr/bin/env node
// Entry point of `npm start`, `npm test`, `npm run bench` and friends: installs what is missing
// (pnpm, the workspace's dependencies, the compiled packages), then runs the
// command: `start` in this process, the others as a child. Only Node.js 20+ and npm are assumed.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureDebianPackages } from './debian-packages.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const PNPM_VERSION = '12.4.2';
const [command = 'test', ...rest] = process.argv.slice(2);

function log(message) {
  process.stderr.write(`[bmaas] ${message}\n`);
}

function pnpmCommand() {
  try {
    const version = execFileSync('pnpm', ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (version === PNPM_VERSION) return ['pnpm'];
  } catch {}
  // npx keeps the pinned pnpm in npm's cache: no global install, works without root.
  return ['npx', '--yes', `pnpm@${PNPM_VERSION}`];
}

function run(argv, options = {}) {
  const result = spawnSync(argv[0], argv.slice(1), { cwd: root, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    log(`failed: ${argv.join(' ')}`);
    process.exit(result.status ?? 1);
  }
}

function mtime(path) {
  return existsSync(path) ? statSync(path).mtimeMs : 0;
}

function ensureInstalled() {
  const marker = join(root, 'node_modules', '.modules.yaml');
  const manifests = ['pnpm-lock.yaml', 'package.json', 'pnpm-workspace.yaml'].map((f) => mtime(join(root, f)));
  if (mtime(marker) >= Math.max(...manifests)) return;
  log('installing dependencies (first run)…');
  run([...pnpmCommand(), 'install', '--frozen-lockfile', '--reporter=append-only']);
}

function ensureBuilt() {
  // tsc -b is incremental: a no-op when the compiled packages are current.
  run([join(root, 'node_modules', '.bin', 'tsc'), '-b']);
  // The file server's sendfile(2) module: compiled when a C compiler is there (a no-op when current);
  // without one the file server copies through user space.
  run([process.execPath, join(root, 'packages', 'sendfile', 'scripts', 'build-native.mjs')]);
}

function exec(argv) {
  const child = spawn(argv[0], argv.slice(1), { cwd: root, stdio: 'inherit' });
  // A Ctrl-C reaches the child from the terminal too; passing signals on covers
  // `kill <this pid>`. The child stops in its own order; we wait for it.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

ensureInstalled();
switch (command) {
  case 'start': {
    ensureBuilt();
    // The stack's supervisor runs in this process: one Node process between npm and the
    // children instead of two (this script waiting on another Node that runs the stack).
    const supervisor = pathToFileURL(join(root, 'packages', 'stack', 'dist', 'supervisor.js')).href;
    const { runStackCommand } = await import(supervisor);
    runStackCommand(rest);
    break;
  }
  case 'lab':
    ensureBuilt();
    ensureDebianPackages(
      join(root, 'packages', 'lab', 'debian-packages.txt'),
      'the lab cannot start machines without them',
    );
    exec([process.execPath, join(root, 'packages', 'lab', 'dist', 'main.js'), ...rest]);
    break;
  case 'test':
    ensureBuilt();
    exec([process.execPath, join(root, 'scripts', 'test.mjs'), ...rest]);
    break;
  case 'bench':
    ensureBuilt();
    exec([process.execPath, join(root, 'bench', 'dist', 'main.js'), ...rest]);
    break;
  case 'build':
    ensureBuilt();
    break;
  default:
    log(`unknown command ${command}`);
    process.exit(2);
}
