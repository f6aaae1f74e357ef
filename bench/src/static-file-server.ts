import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BOOT_PATH_PATTERN } from './macs.js';
import { ServedProcess } from './served-process.js';

export interface StaticBootFiles {
  /** The conductors' http roots, tried in order. */
  roots: readonly string[];
  /** [pxe]pxe_config_subdir: where the per-MAC links are. */
  pxeConfigSubdir: string;
}

const BOOT_PATH = new RegExp(BOOT_PATH_PATTERN);

/**
 * The smallest honest Node.js file server for boot scripts: node:http and
 * fs.readFile, no framework, no cache. `/v1/boot/<mac>/boot.ipxe` reads the
 * pxelinux.cfg link of that MAC from each root in turn, as nginx does.
 */
export function createStaticBootFileServer(files: StaticBootFiles): http.Server {
  return http.createServer(async (req, res) => {
    const match = req.method === 'GET' ? BOOT_PATH.exec(req.url ?? '') : null;
    if (match) {
      for (const root of files.roots) {
        try {
          const body = await readFile(join(root, files.pxeConfigSubdir, match[1] as string));
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
          res.end(body);
          return;
        } catch {
          // Not in this root: try the next.
        }
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain', 'content-length': 10 });
    res.end('not found\n');
  });
}

const MAIN = fileURLToPath(new URL('./static-file-server-main.js', import.meta.url));

/** Starts the file server as a process of its own (so its CPU and memory are its own). */
export async function startStaticFileServer(port: number, files: StaticBootFiles): Promise<ServedProcess> {
  const args = [
    MAIN,
    '--port',
    String(port),
    '--subdir',
    files.pxeConfigSubdir,
    ...files.roots.flatMap((root) => ['--root', root]),
  ];
  const server = ServedProcess.spawn('node-static', process.execPath, args, `http://127.0.0.1:${port}`);
  await server.waitUntilServing('/');
  return server;
}
