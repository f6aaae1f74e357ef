import { closeSync, constants, fstatSync, openSync, realpathSync, type Stats } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, resolve, sep } from 'node:path';
import { ConfigError, type ConfigSection, type Logger, writesDebug } from '@bmaas/common';
import type { Sendfile } from '@bmaas/sendfile';
import { FileSender } from './file-sender.js';
import { etagOf, lastModifiedOf, notModified, selectRange } from './http-conditionals.js';

export interface HttpFileServerOptions {
  /** Directory served; nothing outside it is ever read. */
  root: string;
  logger: Logger;
  /**
   * Whether a file (by its base name, after links are resolved) is sent as
   * text: the enabled boot interfaces say which of their files are (the
   * registry's textFileMatcher). Everything else is sent as bytes.
   */
  isTextFile: (name: string) => boolean;
  /** Bodies past their first chunk go by sendfile(2) when given ([deploy]http_server_sendfile). */
  sendfile?: Sendfile | undefined;
  /** SO_SNDBUF of a connection while sendfile sends on it ([deploy]http_server_send_buffer; 0 = the kernel's). */
  sendBufferBytes?: number;
}

function plain(res: http.ServerResponse, status: number, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  const body = `${text}\n`;
  res
    .writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      ...headers,
    })
    .end(body);
}

function isInside(root: string, path: string): boolean {
  return path === root || path.startsWith(root + sep);
}

/**
 * The path a URL asks for, resolved inside root, or undefined when it
 * cannot be a file there (bad encoding, NUL, or a path leaving the root).
 */
export function resolveInsideRoot(root: string, rawUrl: string): string | undefined {
  const rawPath = rawUrl.split(/[?#]/, 1)[0] ?? '';
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return undefined;
  // Dot-files are never boot files: the temporaries of atomic writes (.<name>.<random>.tmp) and image records.
  if (decoded.split('/').some((segment) => segment.startsWith('.') && segment !== '.' && segment !== '..')) {
    return undefined;
  }
  const full = resolve(root, `.${decoded.startsWith('/') ? '' : '/'}${decoded}`);
  return isInside(root, full) ? full : undefined;
}

/**
 * Serves the boot files under [deploy]http_root to booting machines: GET and
 * HEAD of regular files only, streamed with their length, with what static
 * servers add for resumed and cached downloads (ETag, Last-Modified, 304,
 * single byte ranges, If-Range: see http-conditionals.ts). Directories are
 * never listed: they answer 404, as a missing path does. Symbolic links are
 * followed only when they end inside the root (the pxelinux.cfg/<mac> links
 * are relative links into it), and the resolved file is opened without
 * following a link.
 *
 * The path is resolved, the file opened and its status read with synchronous
 * calls on the event loop, and the status line and headers are sent at once,
 * before the first chunk is read: these are system calls of microseconds on a
 * local root, where going through libuv's thread pool put each of them
 * behind the running downloads' 1 MiB reads and then behind the busy event
 * loop (10-80 ms apiece in an image storm). Only the body's reads use the pool.
 */
export function createHttpFileServer(options: HttpFileServerOptions): http.Server {
  const root = resolve(options.root);
  const logger = options.logger;
  let realRoot: string | undefined;
  const sender = new FileSender({ sendfile: options.sendfile, sendBufferBytes: options.sendBufferBytes ?? 0 });

  async function serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      plain(res, 405, 'Method not allowed', { Allow: 'GET, HEAD' });
      return;
    }
    const wanted = resolveInsideRoot(root, req.url ?? '/');
    if (!wanted) {
      plain(res, 404, 'Not found');
      return;
    }
    let real: string;
    try {
      realRoot ??= realpathSync.native(root);
      real = realpathSync.native(wanted);
    } catch {
      plain(res, 404, 'Not found');
      return;
    }
    if (!isInside(realRoot, real)) {
      logger.warn('refused a path leading outside the HTTP root', { url: req.url });
      plain(res, 404, 'Not found');
      return;
    }
    // The resolved path has no links left: one swapped in since (ELOOP) is not followed. O_NONBLOCK: a FIFO
    // opens at once (then answers 404 as not a regular file) instead of blocking until a writer comes.
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    let fd: number;
    try {
      fd = openSync(real, flags);
    } catch {
      plain(res, 404, 'Not found');
      return;
    }
    try {
      const info = fstatSync(fd);
      // A directory answers as a missing path: a 403 would tell which node folders exist.
      if (!info.isFile()) {
        plain(res, 404, 'Not found');
        return;
      }
      await answer(req, res, fd, info, options.isTextFile(basename(real)));
    } finally {
      closeSync(fd);
    }
  }

  /** Writes the answer for an open regular file (which the caller closes). */
  async function answer(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    fd: number,
    info: Stats,
    text: boolean,
  ): Promise<void> {
    // Header names as written in RFC 9110: GRUB's http module matches "Content-Length: " case-sensitively
    // (without it GRUB reads no body at all).
    const validators = { ETag: etagOf(info), 'Last-Modified': lastModifiedOf(info) };
    if (notModified(req.headers, info)) {
      res.writeHead(304, validators).end();
      return;
    }
    const headers: http.OutgoingHttpHeaders = {
      'Content-Type': text ? 'text/plain; charset=utf-8' : 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ...validators,
    };
    const selection = selectRange(req.headers, info);
    if (selection.kind === 'unsatisfiable') {
      plain(res, 416, 'Range not satisfiable', { 'Content-Range': `bytes */${info.size}` });
      return;
    }
    const { start, end } = selection.kind === 'range' ? selection : { start: 0, end: info.size - 1 };
    if (selection.kind === 'range') {
      res.writeHead(206, {
        ...headers,
        'Content-Length': end - start + 1,
        'Content-Range': `bytes ${start}-${end}/${info.size}`,
      });
    } else {
      res.writeHead(200, { ...headers, 'Content-Length': info.size });
    }
    if (req.method === 'HEAD' || end < start) {
      res.end();
      return;
    }
    // The head goes out now, not with the first chunk: a client sees its answer begin before the read.
    res.flushHeaders();
    await sender.send(fd, res, start, end);
  }

  const server = http.createServer((req, res) => {
    // One debug line per answer: which machine fetched what (a boot is otherwise invisible here).
    res.once('finish', () => {
      if (writesDebug(logger)) {
        logger.debug(`${req.method} ${req.url} ${res.statusCode}`, {
          method: req.method,
          url: req.url,
          status: res.statusCode,
          remote: req.socket.remoteAddress,
        });
      }
    });
    serve(req, res).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ERR_STREAM_PREMATURE_CLOSE') {
        res.destroy();
        return;
      }
      if (error.code === 'ETIMEDOUT') {
        logger.warn('gave up a download its client stopped reading', { url: req.url, error: error.message });
        // Reset, not closed: a graceful close would wait behind the bytes the client is not reading.
        res.socket?.resetAndDestroy();
        return;
      }
      logger.error('HTTP file server failed', { url: req.url, error: error.message });
      // After the head, only closing the connection tells the client its body is incomplete.
      if (!res.headersSent) plain(res, 500, 'Internal error');
      else res.destroy();
    });
  });
  // A machine fetches its kernel, then its ramdisk, on one connection; in a storm it may still be
  // reading the kernel's last buffered megabytes seconds after the server wrote them. Node's 5 s
  // idle timeout then closed the connection under the next request (ECONNRESET); nginx keeps 75 s.
  server.keepAliveTimeout = 75_000;
  return server;
}

/** Address of the built-in file server: [deploy]http_server_host_ip and the port of [deploy]http_url. */
export function fileServerAddress(deploy: ConfigSection<'deploy'>): { host: string; port: number } {
  if (!deploy.http_url) throw new ConfigError('[deploy]serve_http_root needs [deploy]http_url (the port to serve on)');
  const url = new URL(deploy.http_url);
  if (url.protocol !== 'http:') {
    throw new ConfigError(`[deploy]http_url ${deploy.http_url}: the built-in file server speaks plain http only`);
  }
  const port = url.port ? Number(url.port) : 80;
  return { host: deploy.http_server_host_ip, port };
}

export async function listen(server: http.Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolvePromise(server.address() as AddressInfo);
    });
  });
}
