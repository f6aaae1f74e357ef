import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until, waitFor } from '@bmaas/common';
import { loadSendfile, socketDescriptor } from '@bmaas/sendfile';
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

/** GET with a keep-alive agent of one socket: the answers come one after another on one connection. */
function getOnOneConnection(agent: http.Agent, port: number, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

// Both ways a body goes: through the pool's buffers, and by sendfile(2) after the first chunk.
describe.each([
  ['copying each chunk', false],
  ['sendfile(2) after the first chunk', true],
])('FileSender, %s', (_name, zeroCopy) => {
  let dir: string;
  let server: http.Server;
  let port: number;
  let sender: FileSender;
  // Larger than what loopback buffers hold: a client that leaves after the first bytes leaves a download running.
  const content = randomBytes(16 * 1024 * 1024 + 3);
  const failures: Error[] = [];
  let lastSendBuffer = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-file-sender-'));
    writeFileSync(join(dir, 'image'), content);
    const sendfile = zeroCopy ? loadSendfile().sendfile : undefined;
    if (zeroCopy && !sendfile) throw new Error(`no sendfile: ${loadSendfile().reason}`);
    // One 4 KiB buffer for everyone: concurrent downloads take turns chunk by chunk.
    sender = new FileSender({ sendfile, sendBufferBytes: 65536, stallMs: 1000, pool: new BufferPool(4096, 1) });
    server = http.createServer(async (req, res) => {
      const [start, end] = (req.url ?? '').slice(1).split('-').map(Number) as [number, number];
      const fd = openSync(join(dir, 'image'), 'r');
      res.writeHead(200, { 'Content-Length': end - start + 1 });
      const socket = res.socket;
      await sender
        .send(fd, res, start, end)
        .then(() => {
          const socketFd = socketDescriptor(socket);
          // Bodies longer than the one 4 KiB chunk: the ones sendfile sent.
          if (sendfile && socketFd !== undefined && end - start + 1 > 4096) {
            lastSendBuffer = sendfile.sendBufferSize(socketFd);
          }
        })
        .catch((error: NodeJS.ErrnoException) => {
          failures.push(error);
          // As the file server does: a stalled client's connection is reset, its queued bytes dropped.
          if (error.code === 'ETIMEDOUT') res.socket?.resetAndDestroy();
          else res.destroy();
        })
        .finally(() => closeSync(fd));
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

  it('sends by sendfile(2) past the first chunk only where asked', async () => {
    expect(sender.zeroCopy).toBe(zeroCopy);
    const startedBefore = loadSendfile().sendfile?.started ?? 0;
    const whole = Buffer.from(await (await fetch(`http://127.0.0.1:${port}/0-${content.length - 1}`)).arrayBuffer());
    const oneChunk = Buffer.from(await (await fetch(`http://127.0.0.1:${port}/10-4105`)).arrayBuffer());
    expect(whole.equals(content)).toBe(true);
    expect(oneChunk.equals(content.subarray(10, 4106))).toBe(true);
    // The whole file takes one transfer; a body of one chunk goes by the buffer alone.
    expect((loadSendfile().sendfile?.started ?? 0) - startedBefore).toBe(zeroCopy ? 1 : 0);
    // The connection's send buffer is the one asked for (Linux reports twice the size set).
    if (zeroCopy) expect(lastSendBuffer).toBe(131072);
  });

  it('frames each answer on a kept-alive connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const [start, end] of [
        [0, content.length - 1],
        [17, 5_000_000],
        [0, content.length - 1],
      ] as Array<[number, number]>) {
        const body = await getOnOneConnection(agent, port, `/${start}-${end}`);
        expect(body.equals(content.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
      }
    } finally {
      agent.destroy();
    }
  });

  it('ends a download whose client went away as closed early, leaving nothing running', async () => {
    failures.length = 0;
    const socket = await new Promise<import('node:net').Socket>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/0-${content.length - 1}` }, (res) => {
        res.once('data', () => resolve(res.socket));
      });
      req.on('error', () => {});
      setTimeout(() => reject(new Error('no answer')), 5000);
    });
    socket.resetAndDestroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(failures.map((error) => (error as NodeJS.ErrnoException).code)).toEqual(['ERR_STREAM_PREMATURE_CLOSE']);
    expect(loadSendfile().sendfile?.running ?? 0).toBe(0);
  });

  // The copy path has no limit of its own: its write waits as long as the socket does.
  if (!zeroCopy) return;
  it('gives up a download whose client stopped reading, as stalled', async () => {
    failures.length = 0;
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/0-${content.length - 1}` }, (res) => {
        res.once('data', () => {
          res.pause();
          resolve(res);
        });
      });
      req.on('error', () => {});
      setTimeout(() => reject(new Error('no answer')), 5000);
    });
    await waitFor(
      'the stalled transfer to fail',
      until(() => failures.length > 0),
      { timeoutMs: 5000, intervalMs: 50 },
    );
    // The stall limit here is 1 s; the module looks at stalled transfers once a second.
    expect(failures.map((error) => (error as NodeJS.ErrnoException).code)).toEqual(['ETIMEDOUT']);
    expect(loadSendfile().sendfile?.running ?? 0).toBe(0);
    // The connection was reset: a client reading again finds it closed.
    const closed = new Promise((resolve) => answer.socket.once('close', resolve));
    answer.on('error', () => {});
    answer.resume();
    await closed;
  });
});
