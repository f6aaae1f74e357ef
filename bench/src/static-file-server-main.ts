#!/usr/bin/env node
// node static-file-server-main.js --port PORT --subdir pxelinux.cfg ROOT...
import { createStaticBootFileServer } from './static-file-server.js';

const args = process.argv.slice(2);
const roots: string[] = [];
let port = 0;
let pxeConfigSubdir = 'pxelinux.cfg';
for (let i = 0; i < args.length; i++) {
  const arg = args[i] as string;
  if (arg === '--port') port = Number(args[++i]);
  else if (arg === '--subdir') pxeConfigSubdir = args[++i] ?? pxeConfigSubdir;
  else roots.push(arg);
}
if (!Number.isInteger(port) || port <= 0 || roots.length === 0) {
  process.stderr.write('usage: static-file-server-main.js --port PORT [--subdir DIR] ROOT...\n');
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
