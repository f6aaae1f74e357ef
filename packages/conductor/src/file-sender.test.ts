import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool, FileSender } from './file-sender.js';

describe('BufferPool', () => {
  it('allocates at most max buffers, then hands released ones to waiters in order', async () => {
    const pool = new BufferPool(16, 2);
    const a = (await pool.acquire()) as Buffer;
    const b = (await pool.acquire()) as Buffer;
    const order: string[] = [];
    const first = Promise.resolve(pool.acquire()).then((buffer) => order.push(`first ${buffer === a}`));
    const second = Promise.resolve(pool.acquire()).then((buffer) => order.push(`second ${buffer === b}`));
    expect(pool.size).toBe(2);
    pool.release(a);
    pool.release(b);
    await Promise.all([first, second]);
    expect(order).toEqual(['first true', 'second true']);
    expect(pool.size).toBe(2);
  });
});

describe('FileSender', () => {
  let dir: string;
  let server: http.Server;
  let port: number;
  const content = randomBytes(100_003);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-file-sender-'));
    writeFileSync(join(dir, 'image'), content);
    // One 4 KiB buffer for everyone: concurrent downloads take turns chunk by chunk.
    const sender = new FileSender(new BufferPool(4096, 1));
    server = http.createServer(async (req, res) => {
      const [start, end] = (req.url ?? '').slice(1).split('-').map(Number) as [number, number];
      const fd = openSync(join(dir, 'image'), 'r');
      res.writeHead(200, { 'Content-Length': end - start + 1 });
      await sender.send(fd, res, start, end).finally(() => closeSync(fd));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends exactly the asked bytes to several downloads sharing one buffer', async () => {
    const parts: Array<[number, number]> = [
      [0, content.length - 1],
      [5, 9000],
      [content.length - 4097, content.length - 1],
      [0, 0],
    ];
    const bodies = await Promise.all(
      parts.map(async ([start, end]) =>
        Buffer.from(await (await fetch(`http://127.0.0.1:${port}/${start}-${end}`)).arrayBuffer()),
      ),
    );
    parts.forEach(([start, end], i) => {
      expect(bodies[i]?.equals(content.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    });
  });
});
