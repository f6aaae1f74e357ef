import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { createRootLogger } from '@bmaas/common';
import { ipxeBootInterface } from '@bmaas/ipxe-boot-interface';
import { loadSendfile } from '@bmaas/sendfile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFileServer, resolveInsideRoot } from './http-file-server.js';
import { textFileMatcher } from './registry/boot-descriptors.js';

const UUID = '11111111-2222-4333-8444-555555555555';
const SCRIPT = '#!ipxe\necho hello\n';
let base: string;
let root: string;
let server: http.Server;
let port: number;
const kernel = randomBytes(1024 * 1024 + 17);
const logLines: Array<Record<string, unknown>> = [];
const logStream = new PassThrough();
logStream.on('data', (chunk: Buffer) => {
  for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Header names as sent, case kept. */
  rawNames: string[];
  body: Buffer;
}

/** A raw request: the path is sent exactly as given (no client-side normalisation). */
function request(path: string, method = 'GET', headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawNames: res.rawHeaders.filter((_, index) => index % 2 === 0),
          body: Buffer.concat(chunks),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'bmaas-http-root-'));
  root = join(base, 'httpboot');
  mkdirSync(join(root, UUID), { recursive: true });
  mkdirSync(join(root, 'pxelinux.cfg'));
  writeFileSync(join(root, UUID, 'config'), SCRIPT);
  writeFileSync(join(root, UUID, 'deploy_kernel'), kernel);
  writeFileSync(join(root, 'boot.ipxe'), SCRIPT);
  // A file being written, as atomic writes name it until the rename.
  writeFileSync(join(root, UUID, '.deploy_kernel.0123456789ab.tmp'), 'half written');
  writeFileSync(join(root, '.hidden'), 'half written');
  writeFileSync(join(base, 'secret'), 'outside the root\n');
  // As the iPXE boot interface lays them out: a relative link per MAC into the root.
  symlinkSync(`../${UUID}/config`, join(root, 'pxelinux.cfg', '52-54-00-12-34-56'));
  symlinkSync('../secret', join(root, 'escape'));
  symlinkSync(join(base, 'secret'), join(root, 'pxelinux.cfg', 'absolute-escape'));
  const logger = createRootLogger({ level: 'debug', format: 'json', stream: logStream });
  // The text files of the enabled boot interfaces, as the conductor asks its registry.
  const isTextFile = textFileMatcher([ipxeBootInterface]);
  // As a conductor runs it by default: bodies past their first 1 MiB by sendfile(2) (the kernel here is 17 bytes longer).
  const { sendfile, reason } = loadSendfile();
  if (!sendfile) throw new Error(`no sendfile: ${reason}`);
  server = createHttpFileServer({ root, logger, isTextFile, sendfile });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  rmSync(base, { recursive: true, force: true });
});

describe('conductor HTTP file server', () => {
  it('sends Content-Length and Content-Type spelled as GRUB matches them (case-sensitively)', async () => {
    for (const path of ['/boot.ipxe', `/${UUID}/deploy_kernel`]) {
      expect((await request(path)).rawNames, path).toEqual(expect.arrayContaining(['Content-Type', 'Content-Length']));
    }
  });

  it('serves a boot script as text with its length', async () => {
    const answer = await request('/boot.ipxe');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.headers['content-length']).toBe(String(SCRIPT.length));
    expect(answer.body.toString()).toBe(SCRIPT);
  });

  it('follows the relative pxelinux.cfg links inside the root', async () => {
    const answer = await request('/pxelinux.cfg/52-54-00-12-34-56');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.body.toString()).toBe(SCRIPT);
  });

  it('streams binaries whole as octet-stream, and answers HEAD without a body', async () => {
    const answer = await request(`/${UUID}/deploy_kernel`);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/octet-stream');
    expect(answer.headers['content-length']).toBe(String(kernel.length));
    expect(answer.body.equals(kernel)).toBe(true);
    const head = await request(`/${UUID}/deploy_kernel`, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(kernel.length));
    expect(head.body.length).toBe(0);
  });

  it.each([
    ['/../secret'],
    ['/../../../../etc/passwd'],
    ['/pxelinux.cfg/../../secret'],
    ['/%2e%2e/secret'],
    ['/%2E%2E%2Fsecret'],
    ['/pxelinux.cfg/..%2f..%2fsecret'],
    ['/boot.ipxe%00.png'],
    ['/%E0%A4%A'],
    ['/..\\secret'],
    ['/escape'],
    ['/pxelinux.cfg/absolute-escape'],
    ['/missing'],
    [`/${UUID}/.deploy_kernel.0123456789ab.tmp`],
    ['/.hidden'],
  ])('never serves %s', async (path) => {
    const answer = await request(path);
    expect(answer.status).toBe(404);
    expect(answer.body.toString()).not.toContain('outside the root');
  });

  it('answers a directory exactly as a missing path: no listing, and no telling which node folders exist', async () => {
    const missing = await request('/22222222-2222-4333-8444-555555555555/');
    expect(missing.status).toBe(404);
    for (const path of ['/', `/${UUID}/`, `/${UUID}`, '/pxelinux.cfg']) {
      const answer = await request(path);
      expect({ status: answer.status, body: answer.body.toString() }, path).toEqual({
        status: missing.status,
        body: missing.body.toString(),
      });
    }
  });

  it('gets over a client leaving mid-download: no error logged, the next download whole', async () => {
    writeFileSync(join(root, UUID, 'deploy_ramdisk'), Buffer.alloc(8 * 1024 * 1024, 1));
    await new Promise<void>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/${UUID}/deploy_ramdisk` }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const answer = await request(`/${UUID}/deploy_kernel`);
    expect(answer.body.equals(kernel)).toBe(true);
    expect(logLines.filter((line) => line.level === 'error')).toEqual([]);
  });

  it("keeps an idle connection longer than Node's 5 s: a machine still reading its kernel asks for its ramdisk on it", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
        });
        req.on('error', reject);
      });
    try {
      expect(await get(`/${UUID}/deploy_kernel`)).toEqual({ status: 200, reused: false });
      await new Promise((resolve) => setTimeout(resolve, 6000));
      // Closed by the server meanwhile, the agent would have dropped it and opened another.
      expect(await get(`/${UUID}/deploy_kernel`)).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
    }
  }, 15_000);

  it('answers a FIFO under the root with 404 at once (opened without blocking)', async () => {
    execFileSync('mkfifo', [join(root, 'fifo')]);
    const answer = await request('/fifo');
    expect(answer.status).toBe(404);
  });

  it("sends the status line and headers before the body's first read, which waits for libuv's thread pool", async () => {
    // Every thread of the pool held by an open of a FIFO, which blocks until a writer comes: a path
    // resolved or a file opened through the pool would wait here too.
    const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
    const fifos = Array.from({ length: threads }, (_, i) => join(base, `pool-${i}`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    const held = fifos.map((fifo) => open(fifo, 'r'));
    const release = () => {
      // A writer for each FIFO lets its open return (O_NONBLOCK: ENXIO, ignored, if that open has not begun).
      for (const fifo of fifos) {
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
        } catch {}
      }
    };
    try {
      const head = await new Promise<http.IncomingMessage>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path: `/${UUID}/deploy_kernel` }, resolve).on('error', reject);
        setTimeout(() => reject(new Error('no status line within 5 s while the thread pool was busy')), 5000);
      });
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-length']).toBe(String(kernel.length));
      const chunks: Buffer[] = [];
      head.on('data', (chunk: Buffer) => chunks.push(chunk));
      // The body needs the pool: nothing of it arrives while the pool is held.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(chunks.length).toBe(0);
      release();
      await new Promise((resolve) => head.on('end', resolve));
      expect(Buffer.concat(chunks).equals(kernel)).toBe(true);
    } finally {
      release();
      for (const handle of await Promise.allSettled(held))
        if (handle.status === 'fulfilled') await handle.value.close();
      for (const fifo of fifos) rmSync(fifo, { force: true });
    }
  });

  it('takes GET and HEAD only', async () => {
    const answer = await request('/boot.ipxe', 'POST');
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET, HEAD');
  });

  it('logs every answer at debug level: method, path, status and the client', async () => {
    await request(`/${UUID}/deploy_kernel`, 'HEAD');
    await request('/missing-file');
    // the line is written when the answer is finished, just after the client saw it
    await new Promise((resolve) => setImmediate(resolve));
    expect(logLines).toContainEqual(
      expect.objectContaining({
        level: 'debug',
        message: `HEAD /${UUID}/deploy_kernel 200`,
        status: 200,
        remote: '127.0.0.1',
      }),
    );
    expect(logLines).toContainEqual(expect.objectContaining({ message: 'GET /missing-file 404', status: 404 }));
  });

  it('resolves paths inside the root only', () => {
    expect(resolveInsideRoot('/srv/root', '/a/../b?x=1')).toBe('/srv/root/b');
    expect(resolveInsideRoot('/srv/root', '/a/../../b')).toBeUndefined();
    expect(resolveInsideRoot('/srv/root', '/a%00')).toBeUndefined();
    expect(resolveInsideRoot('/srv/root', '/%zz')).toBeUndefined();
  });
});

describe('conductor HTTP file server: validators and byte ranges', () => {
  const path = `/${UUID}/deploy_kernel`;
  const size = kernel.length;
  const ranged = (range: string, extra: Record<string, string> = {}) =>
    request(path, 'GET', { Range: range, ...extra });

  it('sends Accept-Ranges, a strong ETag from inode, size and mtime, and Last-Modified', async () => {
    const answer = await request(path, 'HEAD');
    const info = statSync(join(root, UUID, 'deploy_kernel'));
    expect(answer.headers['accept-ranges']).toBe('bytes');
    expect(answer.headers.etag).toBe(
      `"${info.ino.toString(16)}-${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`,
    );
    expect(answer.headers['last-modified']).toBe(info.mtime.toUTCString());
  });

  it('changes the ETag when the file is replaced (a new inode), as boot files are', async () => {
    const before = (await request('/boot.ipxe', 'HEAD')).headers.etag;
    writeFileSync(join(root, 'boot.ipxe.new'), SCRIPT);
    renameSync(join(root, 'boot.ipxe.new'), join(root, 'boot.ipxe'));
    expect((await request('/boot.ipxe', 'HEAD')).headers.etag).not.toBe(before);
  });

  it.each([
    ['bytes=0-0', 0, 0],
    ['bytes=1000-70535', 1000, 70535],
    ['bytes=70000-', 70000, size - 1],
    ['bytes=-500', size - 500, size - 1],
    [`bytes=${size - 10}-${size + 5000}`, size - 10, size - 1],
    [`bytes=-${size + 10}`, 0, size - 1],
    ['bytes = 5-9', 5, 9],
  ])('answers %s with 206 and exactly those bytes', async (range, start, end) => {
    const answer = await ranged(range);
    expect(answer.status).toBe(206);
    expect(answer.headers['content-range']).toBe(`bytes ${start}-${end}/${size}`);
    expect(answer.headers['content-length']).toBe(String(end - start + 1));
    expect(answer.body.equals(kernel.subarray(start, end + 1))).toBe(true);
  });

  it.each([[`bytes=${size}-`], [`bytes=${size + 1}-${size + 9}`], ['bytes=-0']])(
    'answers the unsatisfiable %s with 416 and Content-Range bytes */size',
    async (range) => {
      const answer = await ranged(range);
      expect(answer.status).toBe(416);
      expect(answer.headers['content-range']).toBe(`bytes */${size}`);
    },
  );

  it.each([['bytes=9-5'], ['bytes=abc'], ['items=0-5'], ['bytes=0-1,5-9']])(
    'ignores %s (invalid, another unit, or several ranges) and sends the whole file',
    async (range) => {
      const answer = await ranged(range);
      expect(answer.status).toBe(200);
      expect(answer.body.equals(kernel)).toBe(true);
    },
  );

  it('answers HEAD with a range: 206 headers, no body', async () => {
    const answer = await request(path, 'HEAD', { Range: 'bytes=10-19' });
    expect(answer.status).toBe(206);
    expect(answer.headers['content-range']).toBe(`bytes 10-19/${size}`);
    expect(answer.body.length).toBe(0);
  });

  it('honours If-Range naming the current ETag or Last-Modified, and sends the whole file otherwise', async () => {
    const { etag, 'last-modified': lastModified } = (await request(path, 'HEAD')).headers;
    for (const current of [etag as string, lastModified as string]) {
      const answer = await ranged('bytes=10-19', { 'If-Range': current });
      expect(answer.status, current).toBe(206);
      expect(answer.body.equals(kernel.subarray(10, 20))).toBe(true);
    }
    const stale = new Date(Date.parse(lastModified as string) - 60_000).toUTCString();
    for (const other of ['"another"', `W/${etag}`, stale, 'not a date']) {
      const answer = await ranged('bytes=10-19', { 'If-Range': other });
      expect(answer.status, other).toBe(200);
      expect(answer.body.equals(kernel)).toBe(true);
    }
  });

  it('answers If-None-Match with the ETag (or *, or in a list, or weak) with 304 and no body', async () => {
    const { etag } = (await request(path, 'HEAD')).headers;
    for (const condition of [etag as string, '*', `"x", ${etag}`, `W/${etag}`]) {
      const answer = await request(path, 'GET', { 'If-None-Match': condition });
      expect(answer.status, condition).toBe(304);
      expect(answer.headers.etag).toBe(etag);
      expect(answer.body.length).toBe(0);
    }
    expect((await request(path, 'GET', { 'If-None-Match': '"other"' })).status).toBe(200);
  });

  it('answers If-Modified-Since at or after Last-Modified with 304, earlier with the file', async () => {
    const { 'last-modified': lastModified } = (await request(path, 'HEAD')).headers;
    const at = Date.parse(lastModified as string);
    expect((await request(path, 'GET', { 'If-Modified-Since': lastModified as string })).status).toBe(304);
    expect((await request(path, 'GET', { 'If-Modified-Since': new Date(at + 5000).toUTCString() })).status).toBe(304);
    const earlier = await request(path, 'GET', { 'If-Modified-Since': new Date(at - 5000).toUTCString() });
    expect(earlier.status).toBe(200);
    expect(earlier.body.equals(kernel)).toBe(true);
    expect((await request(path, 'GET', { 'If-Modified-Since': 'garbage' })).status).toBe(200);
  });

  it('lets If-None-Match decide over If-Modified-Since', async () => {
    const { 'last-modified': lastModified } = (await request(path, 'HEAD')).headers;
    const answer = await request(path, 'GET', {
      'If-None-Match': '"other"',
      'If-Modified-Since': lastModified as string,
    });
    expect(answer.status).toBe(200);
  });

  it('serves an empty file whole, and a range of it as unsatisfiable', async () => {
    writeFileSync(join(root, 'empty'), '');
    const whole = await request('/empty');
    expect(whole.status).toBe(200);
    expect(whole.headers['content-length']).toBe('0');
    expect((await request('/empty', 'GET', { Range: 'bytes=0-' })).status).toBe(416);
  });

  it('answers ranges of a file reached through a link inside the root', async () => {
    const answer = await request('/pxelinux.cfg/52-54-00-12-34-56', 'GET', { Range: 'bytes=0-5' });
    expect(answer.status).toBe(206);
    expect(answer.body.toString()).toBe(SCRIPT.slice(0, 6));
  });
});
