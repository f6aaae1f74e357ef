import { read } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { type Sendfile, SendfileError, socketDescriptor } from '@bmaas/sendfile';

/** Bytes read and written at a time: few system calls per GB (1 MiB: 0.44 CPU s/GB, 256 KiB: 0.59, 64 KiB streams: 1.0). */
export const FILE_CHUNK_BYTES = 1024 * 1024;
/** Buffers at most, shared by all downloads: the memory a storm may take (64 MiB). */
export const MAX_FILE_BUFFERS = 64;
/** How long a client may take no byte before its download is given up: nginx's send_timeout. */
export const SEND_STALL_MS = 60_000;

/**
 * Chunk buffers shared by every download, at most `max` of them: a
 * download takes one for one chunk (read, written, handed to the kernel)
 * and gives it back, so 256 machines at once cost 64 MiB, not 256, and
 * all of them progress. Waiters are served in order.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private readonly waiters: Array<(buffer: Buffer) => void> = [];
  private allocated = 0;

  constructor(
    readonly chunkBytes: number,
    private readonly max: number,
  ) {}

  acquire(): Buffer | Promise<Buffer> {
    const buffer = this.free.pop();
    if (buffer) return buffer;
    if (this.allocated < this.max) {
      this.allocated++;
      return Buffer.allocUnsafeSlow(this.chunkBytes);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(buffer: Buffer): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(buffer);
    else this.free.push(buffer);
  }

  /** Buffers allocated so far (never more than max). */
  get size(): number {
    return this.allocated;
  }
}

class ClosedEarly extends Error {
  readonly code = 'ERR_STREAM_PREMATURE_CLOSE';
}

/** The client stopped reading for the stall limit; the connection is to be closed. */
class Stalled extends Error {
  readonly code = 'ETIMEDOUT';
}

/** The file is shorter than the length its answer announced (it changed since its fstat). */
function endedEarly(position: number, end: number): Error {
  return new Error(`the file ended at byte ${position} of the ${end + 1} announced`);
}

/**
 * Resolves once `chunk` is handed to the kernel (the buffer may be reused);
 * rejects as closed early when the client went away (a write error on the
 * socket, e.g. ECONNRESET, says just that).
 */
function written(res: ServerResponse, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const onClose = () => reject(new ClosedEarly('the client closed the connection'));
    res.once('close', onClose);
    res.write(chunk, (error) => {
      res.off('close', onClose);
      if (error) reject(new ClosedEarly(`the connection failed: ${error.message}`));
      else resolve();
    });
  });
}

/** Reads up to `length` bytes at `position` into the start of `buffer` (in libuv's thread pool). */
function readAt(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buffer, 0, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead)));
  });
}

export interface FileSenderOptions {
  /** sendfile(2) for bodies past their first chunk; without it every chunk is copied. */
  sendfile?: Sendfile | undefined;
  /** SO_SNDBUF of a connection once sendfile sends on it ([deploy]http_server_send_buffer); 0 = the kernel's autotuning. */
  sendBufferBytes?: number;
  /** How long a client may take no byte of a sendfile transfer (SEND_STALL_MS). */
  stallMs?: number;
  pool?: BufferPool;
}

/**
 * Sends part of an open file on an HTTP response.
 *
 * With sendfile(2) (`sendfile`, where the native module is built): the first
 * chunk goes as below, carrying the head out with it; its write callback says
 * that the socket's queue is empty, and the rest goes from the page cache to
 * the socket with no copy through user space and no work per chunk here
 * (in the bench's image storm 0.11-0.23 CPU s/GB for three conductors
 * with the default send buffer, against 0.45-0.51 for the copy below).
 *
 * Otherwise, chunk by chunk: take a buffer, read a chunk into it, write it,
 * wait until the socket took it, give the buffer back. A stream
 * (fs.createReadStream piped to the response) allocates a new 64 KiB buffer
 * per read and queues several per download; this reads 1 MiB at a time (16
 * times fewer system calls) into a bounded set of reused buffers. Many
 * downloads at once keep reads and writes overlapping; one download does not
 * need to overlap its own.
 */
export class FileSender {
  private readonly sendfile: Sendfile | undefined;
  private readonly sendBufferBytes: number;
  private readonly stallMs: number;
  private readonly pool: BufferPool;

  constructor(options: FileSenderOptions = {}) {
    this.sendfile = options.sendfile;
    this.sendBufferBytes = options.sendBufferBytes ?? 0;
    this.stallMs = options.stallMs ?? SEND_STALL_MS;
    this.pool = options.pool ?? new BufferPool(FILE_CHUNK_BYTES, MAX_FILE_BUFFERS);
  }

  /** Whether bodies past their first chunk go by sendfile(2). */
  get zeroCopy(): boolean {
    return this.sendfile !== undefined;
  }

  /** Bytes `start` to `end` (inclusive) of the file open as `fd`, then the end of the response; the caller closes the file. */
  async send(fd: number, res: ServerResponse, start: number, end: number): Promise<void> {
    let position = start;
    while (position <= end) {
      const socketFd = position > start ? this.zeroCopySocket(res) : undefined;
      if (socketFd !== undefined) {
        await this.sendRest(socketFd, fd, res, position, end);
        break;
      }
      position += await this.copyChunk(fd, res, position, end);
    }
    res.end();
  }

  /**
   * The socket's descriptor when the rest may bypass the response: sendfile
   * is there, the body's bytes go out as they are (framed by Content-Length,
   * not chunked: Node.js says so in chunkedEncoding, which writeHead's
   * headers do not show to hasHeader), and nothing is queued on the socket
   * in user space.
   */
  private zeroCopySocket(res: ServerResponse): number | undefined {
    if (!this.sendfile || res.chunkedEncoding !== false || res.socket?.writableLength !== 0) return undefined;
    return socketDescriptor(res.socket);
  }

  private async sendRest(socketFd: number, fd: number, res: ServerResponse, position: number, end: number) {
    const sendfile = this.sendfile as Sendfile;
    const closed = new AbortController();
    const onClose = () => closed.abort();
    res.once('close', onClose);
    try {
      await sendfile.send(socketFd, fd, position, end - position + 1, {
        stallMs: this.stallMs,
        signal: closed.signal,
        sendBufferBytes: this.sendBufferBytes,
      });
    } catch (error) {
      if (!(error instanceof SendfileError)) throw error;
      if (error.code === 'ENODATA') throw endedEarly(position + error.bytesSent, end);
      if (error.code === 'ETIMEDOUT') throw new Stalled(`the client took no byte for ${this.stallMs / 1000} s`);
      throw new ClosedEarly(`the connection failed: ${error.code}`);
    } finally {
      res.off('close', onClose);
    }
  }

  /** Reads one chunk at `position` and writes it; the bytes it sent. */
  private async copyChunk(fd: number, res: ServerResponse, position: number, end: number): Promise<number> {
    const buffer = await this.pool.acquire();
    try {
      const bytesRead = await readAt(fd, buffer, Math.min(buffer.length, end - position + 1), position);
      if (bytesRead === 0) throw endedEarly(position, end);
      await written(res, bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead));
      return bytesRead;
    } finally {
      this.pool.release(buffer);
    }
  }
}
