import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSendfile, type Sendfile, SendfileError, socketDescriptor } from './index.js';

const FILE_BYTES = 5 * 1024 * 1024 + 123;

/** A connected pair on loopback: `server` is the side sendfile writes to, `client` reads. */
async function connectedPair(): Promise<{ server: net.Socket; client: net.Socket; close: () => void }> {
  const listener = net.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const port = (listener.address() as net.AddressInfo).port;
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect(port, '127.0.0.1');
  const server = await accepted;
  listener.close();
  // A peer that resets is what some tests do: the sockets' own read errors are expected there,
  // and what is checked is the error sendfile reports.
  for (const socket of [server, client]) socket.on('error', () => {});
  return {
    server,
    client,
    close: () => {
      server.destroy();
      client.destroy();
    },
  };
}

/** Everything the client reads until the server side ends its half. */
function readAll(client: net.Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  client.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    client.once('end', () => resolve(Buffer.concat(chunks)));
    client.once('error', reject);
  });
}

function serverFd(socket: net.Socket): number {
  const fd = socketDescriptor(socket);
  if (fd === undefined) throw new Error('the accepted socket has no descriptor');
  return fd;
}

describe('Sendfile', () => {
  let dir: string;
  let path: string;
  let content: Buffer;
  let sendfile: Sendfile;

  beforeAll(() => {
    const availability = loadSendfile();
    // Linux with a C compiler at build time (test/debian-packages.txt lists it): the module must be there.
    if (!availability.sendfile) throw new Error(`no sendfile: ${availability.reason}`);
    sendfile = availability.sendfile;
    dir = mkdtempSync(join(tmpdir(), 'sendfile-test-'));
    path = join(dir, 'image');
    content = randomBytes(FILE_BYTES);
    writeFileSync(path, content);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is one per process', () => {
    expect(loadSendfile().sendfile).toBe(sendfile);
  });

  it('sends the range asked for, byte for byte', async () => {
    const pair = await connectedPair();
    const fd = openSync(path, 'r');
    try {
      const received = readAll(pair.client);
      const startedBefore = sendfile.started;
      const sent = await sendfile.send(serverFd(pair.server), fd, 1000, 3 * 1024 * 1024 + 7, { stallMs: 10_000 });
      pair.server.end();
      expect(sent).toBe(3 * 1024 * 1024 + 7);
      expect(sendfile.started - startedBefore).toBe(1);
      expect((await received).equals(content.subarray(1000, 1000 + sent))).toBe(true);
    } finally {
      closeSync(fd);
      pair.close();
    }
  });

  it('sets the send buffer asked for, and leaves the kernel its own without one', async () => {
    const asked = await connectedPair();
    const left = await connectedPair();
    const fd = openSync(path, 'r');
    try {
      const untouched = sendfile.sendBufferSize(serverFd(left.server));
      for (const pair of [asked, left]) pair.client.resume();
      await sendfile.send(serverFd(asked.server), fd, 0, 100_000, { stallMs: 10_000, sendBufferBytes: 65536 });
      await sendfile.send(serverFd(left.server), fd, 0, 100_000, { stallMs: 10_000 });
      // Linux reports twice the size set: the buffer counts its bookkeeping too.
      expect(sendfile.sendBufferSize(serverFd(asked.server))).toBe(131072);
      expect(sendfile.sendBufferSize(serverFd(left.server))).toBeGreaterThanOrEqual(untouched);
      expect(() => sendfile.sendBufferSize(fd)).toThrow(/not a socket/);
    } finally {
      closeSync(fd);
      asked.close();
      left.close();
    }
  });

  it('keeps its own descriptors: the caller may close the file at once', async () => {
    const pair = await connectedPair();
    const fd = openSync(path, 'r');
    const received = readAll(pair.client);
    const sending = sendfile.send(serverFd(pair.server), fd, 0, FILE_BYTES, { stallMs: 10_000 });
    closeSync(fd);
    expect(await sending).toBe(FILE_BYTES);
    pair.server.end();
    expect((await received).equals(content)).toBe(true);
    pair.close();
  });

  it('sends many transfers at once, each complete and in order', async () => {
    const pairs = await Promise.all(Array.from({ length: 24 }, () => connectedPair()));
    const fd = openSync(path, 'r');
    try {
      const results = await Promise.all(
        pairs.map(async (pair, index) => {
          const received = readAll(pair.client);
          const offset = index * 4099;
          const length = FILE_BYTES - offset;
          await sendfile.send(serverFd(pair.server), fd, offset, length, { stallMs: 10_000 });
          pair.server.end();
          return (await received).equals(content.subarray(offset));
        }),
      );
      expect(results).toEqual(pairs.map(() => true));
      expect(sendfile.running).toBe(0);
    } finally {
      closeSync(fd);
      for (const pair of pairs) pair.close();
    }
  });

  it('ends with ECANCELED when aborted, and the connection closes once the caller closes its socket', async () => {
    const pair = await connectedPair();
    pair.client.pause(); // reads nothing: the transfer cannot finish by itself
    const fd = openSync(path, 'r');
    const abort = new AbortController();
    const sending = sendfile.send(serverFd(pair.server), fd, 0, FILE_BYTES, { stallMs: 60_000, signal: abort.signal });
    closeSync(fd);
    await new Promise((resolve) => setTimeout(resolve, 50));
    abort.abort();
    const error = await sending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendfileError);
    expect((error as SendfileError).code).toBe('ECANCELED');
    expect((error as SendfileError).bytesSent).toBeLessThan(FILE_BYTES);
    const closed = new Promise((resolve) => pair.client.once('close', resolve));
    pair.server.destroy();
    pair.client.resume();
    await closed;
  });

  it('does not start when the signal has aborted already', async () => {
    const abort = new AbortController();
    abort.abort();
    await expect(sendfile.send(0, 0, 0, 1, { stallMs: 1000, signal: abort.signal })).rejects.toMatchObject({
      code: 'ECANCELED',
      bytesSent: 0,
    });
  });

  it('fails with the socket error when the peer goes away', async () => {
    const pair = await connectedPair();
    const fd = openSync(path, 'r');
    try {
      pair.client.once('data', () => pair.client.resetAndDestroy());
      const error = await sendfile
        .send(serverFd(pair.server), fd, 0, FILE_BYTES, { stallMs: 10_000 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SendfileError);
      expect(['ECONNRESET', 'EPIPE']).toContain((error as SendfileError).code);
    } finally {
      closeSync(fd);
      pair.close();
    }
  });

  it('fails with ETIMEDOUT when the socket takes nothing for stallMs', async () => {
    const pair = await connectedPair();
    pair.client.pause();
    const fd = openSync(path, 'r');
    try {
      const started = Date.now();
      const error = await sendfile.send(serverFd(pair.server), fd, 0, FILE_BYTES, { stallMs: 300 }).catch((e) => e);
      expect(error).toBeInstanceOf(SendfileError);
      expect((error as SendfileError).code).toBe('ETIMEDOUT');
      expect((error as SendfileError).bytesSent).toBeGreaterThan(0);
      expect((error as SendfileError).bytesSent).toBeLessThan(FILE_BYTES);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    } finally {
      closeSync(fd);
      pair.close();
    }
  });

  it('fails with ENODATA when the file ends before the length asked for', async () => {
    const pair = await connectedPair();
    const fd = openSync(path, 'r');
    try {
      const received = readAll(pair.client);
      const error = await sendfile
        .send(serverFd(pair.server), fd, FILE_BYTES - 100, 1000, { stallMs: 10_000 })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ENODATA', bytesSent: 100 });
      pair.server.end();
      expect((await received).equals(content.subarray(FILE_BYTES - 100))).toBe(true);
    } finally {
      closeSync(fd);
      pair.close();
    }
  });

  it('refuses descriptors that are not open and lengths that are not positive', async () => {
    const pair = await connectedPair();
    const fd = openSync(path, 'r');
    try {
      await expect(sendfile.send(serverFd(pair.server), 1_000_000, 0, 10, { stallMs: 1000 })).rejects.toThrow(
        /bad file descriptor/,
      );
      await expect(sendfile.send(serverFd(pair.server), fd, 0, 0, { stallMs: 1000 })).rejects.toThrow(/length > 0/);
      await expect(sendfile.send(-1, fd, 0, 10, { stallMs: 1000 })).rejects.toThrow(/start\(/);
      await expect(
        sendfile.send(serverFd(pair.server), fd, 0, 10, { stallMs: 1000, sendBufferBytes: -1 }),
      ).rejects.toThrow(/sendBufferBytes >= 0/);
      expect(sendfile.running).toBe(0);
    } finally {
      closeSync(fd);
      pair.close();
    }
  });
});

describe('socketDescriptor', () => {
  it('is the descriptor of a connected socket, undefined once destroyed', async () => {
    const pair = await connectedPair();
    expect(socketDescriptor(pair.server)).toBeGreaterThan(2);
    pair.close();
    expect(socketDescriptor(pair.server)).toBeUndefined();
    expect(socketDescriptor(undefined)).toBeUndefined();
  });
});
