import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, until, waitFor } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';

/**
 * docs/examples/nginx-http-root.conf, the configuration operator-guide.md gives for nginx
 * in front of an http root, run by nginx as written: only its listen address and root are
 * replaced (by a free loopback port and a real http root laid out as the conductor does).
 */

const EXAMPLE = fileURLToPath(new URL('../../docs/examples/nginx-http-root.conf', import.meta.url));
const NGINX = '/usr/sbin/nginx';
const UUID = '3f6c1c1e-1111-4222-8333-444455556666';
const MAC = '52-54-00-aa-bb-cc';
const isRoot = process.getuid?.() === 0;

const missing = spawnSync(NGINX, ['-v']).status === 0 ? null : `${NGINX} is missing (apt-get install nginx-light)`;

function get(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('nginx did not answer within 10 s')));
  });
}

describe.skipIf(missingPrerequisite('nginx in front of an http root', missing))(
  'docs/examples/nginx-http-root.conf',
  () => {
    let dir: string;
    let root: string;
    let port: number;
    let nginx: ReturnType<typeof spawn> | undefined;
    const kernel = Buffer.alloc(300_000, 7).fill(9, 1000, 2000);

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'bmaas-nginx-root-'));
      chmodSync(dir, 0o755);
      root = join(dir, 'httpboot');
      mkdirSync(join(root, UUID), { recursive: true });
      mkdirSync(join(root, 'pxelinux.cfg'));
      writeFileSync(join(root, UUID, 'deploy_kernel'), kernel);
      writeFileSync(join(root, UUID, 'config'), '#!ipxe\necho node\n');
      writeFileSync(join(root, 'boot.ipxe'), '#!ipxe\nchain next\n');
      writeFileSync(join(root, UUID, `.deploy_kernel.0123456789ab.tmp`), 'half written');
      symlinkSync(`../${UUID}/config`, join(root, 'pxelinux.cfg', MAC));
      writeFileSync(join(dir, 'secret'), 'outside the root\n');
      // A file of another user outside the root, linked from inside it.
      if (isRoot) chownSync(join(dir, 'secret'), 65534, 65534);
      symlinkSync('../../secret', join(root, 'pxelinux.cfg', 'escape'));

      port = await freePort();
      const example = readFileSync(EXAMPLE, 'utf8');
      const site = example
        .replace('listen 192.168.77.1:8081;', `listen 127.0.0.1:${port};`)
        .replace('root /var/lib/bmaas/httpboot;', `root ${root};`);
      expect(site).not.toBe(example);
      expect(site).toContain(`root ${root};`);
      const prefix = join(dir, 'nginx');
      mkdirSync(join(prefix, 'tmp'), { recursive: true });
      writeFileSync(join(prefix, 'site.conf'), site);
      const temp = join(prefix, 'tmp');
      writeFileSync(
        join(prefix, 'nginx.conf'),
        [
          'daemon off;',
          'worker_processes 1;',
          isRoot ? 'user nobody nogroup;' : '',
          `pid ${join(prefix, 'nginx.pid')};`,
          `error_log ${join(prefix, 'error.log')} warn;`,
          'events { worker_connections 64; }',
          'http {',
          `  client_body_temp_path ${temp}; proxy_temp_path ${temp}; fastcgi_temp_path ${temp};`,
          `  uwsgi_temp_path ${temp}; scgi_temp_path ${temp};`,
          `  include ${join(prefix, 'site.conf')};`,
          '}',
        ].join('\n'),
      );
      const args = ['-p', prefix, '-c', join(prefix, 'nginx.conf')];
      const check = spawnSync(NGINX, ['-t', '-q', ...args], { encoding: 'utf8' });
      expect(check.stderr).toBe('');
      nginx = spawn(NGINX, args, { stdio: 'ignore' });
      await waitFor(
        'nginx to answer',
        until(() =>
          get(port, '/boot.ipxe').then(
            () => true,
            () => false,
          ),
        ),
        { timeoutMs: 10_000 },
      );
    }, 30_000);

    afterAll(async () => {
      if (nginx && nginx.exitCode === null) {
        const exited = new Promise((r) => nginx?.once('exit', r));
        nginx.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('is the configuration docs/operator-guide.md shows, verbatim', () => {
      const guide = readFileSync(fileURLToPath(new URL('../../docs/operator-guide.md', import.meta.url)), 'utf8');
      expect(guide).toContain(`\`\`\`nginx\n${readFileSync(EXAMPLE, 'utf8')}\`\`\``);
    });

    it('serves a deploy kernel whole, with its length, ETag and Accept-Ranges', async () => {
      const answer = await get(port, `/${UUID}/deploy_kernel`);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-length']).toBe(String(kernel.length));
      expect(answer.headers['accept-ranges']).toBe('bytes');
      expect(answer.headers.etag).toBeTruthy();
      expect(answer.body.equals(kernel)).toBe(true);
    });

    it('serves a byte range of it (206) and refuses one past the end (416)', async () => {
      const part = await get(port, `/${UUID}/deploy_kernel`, { Range: 'bytes=990-2009' });
      expect(part.status).toBe(206);
      expect(part.headers['content-range']).toBe(`bytes 990-2009/${kernel.length}`);
      expect(part.body.equals(kernel.subarray(990, 2010))).toBe(true);
      const past = await get(port, `/${UUID}/deploy_kernel`, { Range: `bytes=${kernel.length}-` });
      expect(past.status).toBe(416);
      expect(past.headers['content-range']).toBe(`bytes */${kernel.length}`);
    });

    it('follows the pxelinux.cfg link into the root and serves boot scripts as text', async () => {
      const answer = await get(port, `/pxelinux.cfg/${MAC}`);
      expect(answer.status).toBe(200);
      expect(answer.body.toString()).toBe('#!ipxe\necho node\n');
      expect((await get(port, '/boot.ipxe')).headers['content-type']).toBe('text/plain');
    });

    it('lists no directory and serves no file being written', async () => {
      for (const path of ['/', `/${UUID}/`, `/${UUID}`, '/pxelinux.cfg/', `/${UUID}/.deploy_kernel.0123456789ab.tmp`]) {
        expect((await get(port, path)).status, path).toBe(404);
      }
    });

    it.skipIf(!isRoot)("refuses a link to another user's file outside the root", async () => {
      const answer = await get(port, '/pxelinux.cfg/escape');
      expect([403, 404]).toContain(answer.status);
      expect(answer.body.toString()).not.toContain('outside the root');
    });
  },
);
