import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { getSystemErrorName } from 'node:util';

/** What native/sendfile.c exports. */
interface NativeModule {
  /** Starts the sending thread; onDone is called once per transfer, errno 0 when all bytes went. */
  init(onDone: (id: number, errno: number, bytesSent: number) => void): void;
  /** Duplicates both descriptors and queues the transfer; throws on bad arguments. */
  start(
    socketFd: number,
    fileFd: number,
    offset: number,
    length: number,
    stallMs: number,
    sendBufferBytes: number,
  ): number;
  /** Ends a running transfer (its onDone comes with ECANCELED); false when it had ended already. */
  cancel(id: number): boolean;
  /** The socket's SO_SNDBUF as the kernel reports it. */
  sendBufferSize(socketFd: number): number;
}

export interface SendOptions {
  /** How long the socket may take no byte before the transfer fails with ETIMEDOUT. */
  stallMs: number;
  /** Ends the transfer with ECANCELED: for a socket the caller closes or gives up on. */
  signal?: AbortSignal;
  /**
   * SO_SNDBUF set on the socket when the transfer starts (it stays for the
   * connection); 0 or absent leaves the kernel's autotuning.
   */
  sendBufferBytes?: number;
}

/**
 * A transfer that ended before its last byte: `code` is the errno's name,
 * e.g. ECANCELED (aborted), ETIMEDOUT (stalled), ENODATA (the file ended
 * early), EPIPE or ECONNRESET (the peer went away).
 */
export class SendfileError extends Error {
  constructor(
    readonly code: string,
    readonly bytesSent: number,
  ) {
    super(`sendfile: ${code} after ${bytesSent} bytes`);
    this.name = 'SendfileError';
  }
}

interface Waiter {
  resolve: (bytesSent: number) => void;
  reject: (error: Error) => void;
}

/**
 * Sends byte ranges of open files to sockets with sendfile(2): the data goes
 * from the page cache to the socket with no copy through user space and no
 * work on the event loop per chunk. The transfers run on one thread of the
 * native module, which holds duplicates of both descriptors: the caller may
 * close its own at any time (and should abort the transfer when it closes the
 * socket; the connection stays open until the transfer has ended).
 */
export class Sendfile {
  private readonly waiters = new Map<number, Waiter>();
  private startedCount = 0;

  constructor(private readonly native: NativeModule) {
    native.init((id, errno, bytesSent) => this.ended(id, errno, bytesSent));
  }

  /** Resolves with `length` once all of it has been handed to the socket; rejects with a SendfileError otherwise. */
  send(socketFd: number, fileFd: number, offset: number, length: number, options: SendOptions): Promise<number> {
    const { signal, stallMs, sendBufferBytes = 0 } = options;
    if (signal?.aborted) return Promise.reject(new SendfileError('ECANCELED', 0));
    return new Promise((resolve, reject) => {
      const id = this.native.start(socketFd, fileFd, offset, length, stallMs, sendBufferBytes);
      this.startedCount++;
      if (!signal) {
        this.waiters.set(id, { resolve, reject });
        return;
      }
      const abort = () => this.native.cancel(id);
      signal.addEventListener('abort', abort, { once: true });
      const settled = () => signal.removeEventListener('abort', abort);
      this.waiters.set(id, {
        resolve: (bytesSent) => {
          settled();
          resolve(bytesSent);
        },
        reject: (error) => {
          settled();
          reject(error);
        },
      });
    });
  }

  /** A socket's SO_SNDBUF as the kernel reports it: twice what was set, since it counts its bookkeeping too. */
  sendBufferSize(socketFd: number): number {
    return this.native.sendBufferSize(socketFd);
  }

  /** Transfers started so far. */
  get started(): number {
    return this.startedCount;
  }

  /** Transfers started and not yet ended. */
  get running(): number {
    return this.waiters.size;
  }

  private ended(id: number, errno: number, bytesSent: number): void {
    const waiter = this.waiters.get(id);
    if (!waiter) return;
    this.waiters.delete(id);
    if (errno === 0) waiter.resolve(bytesSent);
    else waiter.reject(new SendfileError(getSystemErrorName(-errno), bytesSent));
  }
}

export type SendfileAvailability =
  | { sendfile: Sendfile; reason?: undefined }
  | { sendfile?: undefined; reason: string };

/**
 * The descriptor of a connected TCP socket, or undefined (not connected, or a
 * socket without one of its own, such as TLS). Node.js keeps it on the
 * socket's libuv handle and documents no getter for it.
 */
export function socketDescriptor(socket: Socket | null | undefined): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } } | null | undefined)?._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** Where scripts/build-native.mjs puts the module (beside src/ and dist/ alike). */
const MODULE_PATH = '../build/sendfile.node';

const SENDER = Symbol.for('@bmaas/sendfile');

/**
 * The process's Sendfile, or why there is none (not Linux, or the module not
 * built: no C compiler at install time). One per process because the native
 * side is: one thread and one epoll set, started on first use.
 */
export function loadSendfile(): SendfileAvailability {
  if (process.platform !== 'linux')
    return { reason: `sendfile(2) is used on Linux only (this is ${process.platform})` };
  let native: NativeModule & { [SENDER]?: Sendfile };
  try {
    native = createRequire(import.meta.url)(MODULE_PATH) as NativeModule;
  } catch (error) {
    return {
      reason: `the native module is not built (${(error as Error).message.split('\n', 1)[0]}); npm run build builds it where a C compiler is installed`,
    };
  }
  // Kept on the module's exports, which live as long as the process's native side: this file may
  // be evaluated again (a test runner's fresh module graph) while init may run only once.
  native[SENDER] ??= new Sendfile(native);
  return { sendfile: native[SENDER] };
}
