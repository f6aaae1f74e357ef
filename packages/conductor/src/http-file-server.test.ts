import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { createRootLogger } from '@bmaas/common';
import { ipxeBootInterface } from '@bmaas/ipxe-boot-interface';
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
function request(path: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method }, (res) => {
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
  writeFileSync(join(base, 'secret'), 'outside the root\n');
  // As the iPXE boot interface lays them out: a relative link per MAC into the root.
  symlinkSync(`../${UUID}/config`, join(root, 'pxelinux.cfg', '52-54-00-12-34-56'));
  symlinkSync('../secret', join(root, 'escape'));
  symlinkSync(join(base, 'secret'), join(root, 'pxelinux.cfg', 'absolute-escape'));
  const logger = createRootLogger({ level: 'debug', format: 'json', stream: logStream });
  // The text files of the enabled boot interfaces, as the conductor asks its registry.
  const isTextFile = textFileMatcher([ipxeBootInterface]);
  server = createHttpFileServer({ root, logger, isTextFile });
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
