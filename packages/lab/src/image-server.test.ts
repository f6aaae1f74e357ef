import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ImageServer, startImageServer } from './image-server.js';

interface Answer {
  status: number;
  body: Buffer;
  complete: boolean;
}

/** One request over the server's Unix socket; a body that stops coming ends the wait after idleMs. */
function request(socketPath: string, method: string, path: string, body?: string, idleMs = 2000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path }, (res) => {
      const chunks: Buffer[] = [];
      let complete = false;
      res.setTimeout(idleMs, () => res.destroy());
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        complete = true;
      });
      // after the end, the idle timeout or the server closing the connection
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), complete }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the image server', () => {
  let dir: string;
  let socket: string;
  let image: Buffer;
  let server: ImageServer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-images-'));
    socket = join(dir, 'images.sock');
    image = randomBytes(3 * 1024 * 1024);
    await writeFile(join(dir, 'instance.img'), image);
    await writeFile(socket, 'a stale socket file from a killed run');
    server = await startImageServer(socket, join(dir, 'instance.img'));
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the whole image, and 404 for anything else, recording each request', async () => {
    const full = await request(socket, 'GET', server.imagePath);
    expect(full).toMatchObject({ status: 200, complete: true });
    expect(full.body.equals(image)).toBe(true);
    expect((await request(socket, 'GET', '/images/other.img')).status).toBe(404);
    expect((await request(socket, 'PUT', server.imagePath)).status).toBe(404);
    expect(server.requests).toEqual([
      { method: 'GET', url: server.imagePath, status: 200 },
      { method: 'GET', url: '/images/other.img', status: 404 },
      { method: 'PUT', url: server.imagePath, status: 404 },
    ]);
    await server.waitForDownload(server.imagePath, 100);
    await expect(server.waitForDownload('/never', 200)).rejects.toThrow(
      'timed out after 200 ms waiting for a download of /never',
    );
  });

  it('stalls the first download of the stall-once path after 1 MiB, then serves it whole', async () => {
    const stalled = await request(socket, 'GET', server.stallOncePath, undefined, 1500);
    expect(stalled).toMatchObject({ status: 200, complete: false });
    expect(stalled.body.length).toBe(1024 * 1024);
    expect(stalled.body.equals(image.subarray(0, 1024 * 1024))).toBe(true);
    const again = await request(socket, 'GET', server.stallOncePath);
    expect(again).toMatchObject({ status: 200, complete: true });
    expect(again.body.length).toBe(image.length);
  });

  it('keeps what booted instances report, and waits for a report', async () => {
    const uuid = '1be26c0b-03f2-4d2f-a2d5-0d9c8d3e8f10';
    const waiting = server.waitForReport(uuid, 10_000);
    expect((await request(socket, 'POST', `/report/${uuid}`, 'booted from disk')).status).toBe(200);
    expect(await waiting).toEqual({ uuid, body: 'booted from disk' });
    expect((await request(socket, 'POST', '/report/not-a-uuid', 'x')).status).toBe(404);
    await expect(server.waitForReport('00000000-0000-0000-0000-000000000000', 300)).rejects.toThrow(
      /timed out after 300 ms waiting for an instance report of 0{8}-/,
    );
  });

  it('closes with downloads still open, and leaves no listener', async () => {
    const other = await startImageServer(join(dir, 'other.sock'), join(dir, 'instance.img'));
    const hanging = request(join(dir, 'other.sock'), 'GET', other.stallOncePath, undefined, 10_000);
    await other.waitForDownload(other.stallOncePath, 5000);
    await other.close();
    expect((await hanging).complete).toBe(false);
    await expect(stat(join(dir, 'other.sock'))).rejects.toThrow(/ENOENT/);
  });
});
