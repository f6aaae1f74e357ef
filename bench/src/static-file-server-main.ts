#!/usr/bin/env node
// node static-file-server-main.js --port PORT [--subdir pxelinux.cfg] --root ROOT [--root ROOT]...
import { parseCommandLine, UsageError, wholeNumber } from '@bmaas/common';
import { createStaticBootFileServer } from './static-file-server.js';

const USAGE = 'usage: static-file-server-main.js --port PORT [--subdir DIR] --root ROOT [--root ROOT]...';
let port: number;
let roots: string[];
let pxeConfigSubdir: string;
try {
  const values = parseCommandLine(
    process.argv.slice(2),
    { port: { type: 'string' }, subdir: { type: 'string' }, root: { type: 'string', multiple: true } },
    USAGE,
  );
  port = wholeNumber('port', values.port, 1, 65535);
  roots = values.root ?? [];
  if (roots.length === 0) throw new UsageError(`at least one --root\n${USAGE}`);
  pxeConfigSubdir = values.subdir ?? 'pxelinux.cfg';
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
const server = createStaticBootFileServer({ roots, pxeConfigSubdir });
server.listen(port, '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
