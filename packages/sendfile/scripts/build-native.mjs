#!/usr/bin/env node
// Compiles native/sendfile.c into build/sendfile.node with the C compiler ($CC, else cc) against
// the Node-API headers of the node-api-headers package (no node-gyp: one C file, no download of
// Node's headers). Does nothing when the module is newer than its source. Never fails the build:
// without the module the file server copies each chunk through user space, and says why in its
// log (`--strict` makes a failed compile an error, for CI and images).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = dirname(dirname(fileURLToPath(import.meta.url)));
const source = join(packageRoot, 'native', 'sendfile.c');
const output = join(packageRoot, 'build', 'sendfile.node');
const strict = process.argv.includes('--strict');

function give(message) {
  process.stderr.write(`[sendfile] ${message}\n`);
  process.exit(strict ? 1 : 0);
}

if (process.platform !== 'linux') give(`not built: sendfile(2) with epoll is Linux only (this is ${process.platform})`);
if (existsSync(output) && statSync(output).mtimeMs >= statSync(source).mtimeMs) process.exit(0);

let include;
try {
  include = join(dirname(createRequire(import.meta.url).resolve('node-api-headers/package.json')), 'include');
} catch {
  give('not built: the node-api-headers package is not installed');
}
const compiler = process.env.CC || 'cc';
mkdirSync(dirname(output), { recursive: true });
// Written beside, then renamed: a running process never loads a half-written module.
const partial = `${output}.${process.pid}.tmp`;
const args = [
  '-O2',
  '-std=c11',
  '-Wall',
  '-Wextra',
  '-fPIC',
  '-shared',
  '-pthread',
  '-fvisibility=hidden',
  `-I${include}`,
  source,
  '-o',
  partial,
];
const result = spawnSync(compiler, args, { stdio: ['ignore', 'inherit', 'inherit'] });
if (result.error || result.status !== 0) {
  give(
    `not built: ${compiler} ${result.error ? `could not run (${result.error.message})` : 'failed'}; ` +
      'install a C compiler (Debian: gcc, libc6-dev) for zero-copy file serving',
  );
}
renameSync(partial, output);
process.stderr.write(`[sendfile] built ${output}\n`);
