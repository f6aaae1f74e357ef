// The one QMP (QEMU Machine Protocol) client: JSON lines over a Unix socket. The power
// interface opens a short session per operation (withQmp); the lab keeps one open to watch
// events. QEMU serves one client per QMP socket, so a long-lived watcher needs a socket of its own.
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import { WaitTimeoutError, waitFor } from '@bmaas/common';

export class QmpError extends Error {
  override name = 'QmpError';
}

export interface QmpStatus {
  status: string;
  running: boolean;
}

export interface QmpEvent {
  event: string;
  data?: unknown;
  timestamp?: { seconds: number; microseconds: number };
}

export interface QmpConnectOptions {
  /** Bound on connecting, the greeting and capabilities negotiation; default 10 s. */
  timeoutMs?: number;
  /** Bound on each command's answer; default timeoutMs. */
  commandTimeoutMs?: number;
  /**
   * Retry while the socket is missing or refuses (QEMU creates it a moment after it starts),
   * until timeoutMs. Off: a missing socket fails at once (a machine that is not there).
   */
  waitForSocket?: boolean;
}

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

interface QmpMessage {
  QMP?: unknown;
  return?: unknown;
  error?: { class: string; desc: string };
  event?: string;
  id?: number;
}

export class QmpClient {
  /** Events QEMU sent so far (STOP, RESUME, POWERDOWN, SHUTDOWN, ...). */
  readonly events: QmpEvent[] = [];
  private readonly notifier = new EventEmitter();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffered = '';
  private closedBecause: Error | undefined;
  private greeted: () => void = () => {};
  private readonly greeting = new Promise<void>((resolve) => {
    this.greeted = resolve;
  });

  private constructor(
    private readonly socket: Socket,
    private readonly path: string,
    private readonly commandTimeoutMs: number,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (error) => {
      this.closedBecause ??= new QmpError(`QMP at ${path}: ${error.message}`);
    });
    socket.on('close', () => this.onClose());
  }

  /** Connects and negotiates capabilities; everything bounded by timeoutMs. */
  static async connect(path: string, options: QmpConnectOptions = {}): Promise<QmpClient> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    const socket = await openSocket(path, deadline, options.waitForSocket ?? false);
    const client = new QmpClient(socket, path, options.commandTimeoutMs ?? timeoutMs);
    try {
      await client.bounded(client.greeting, Math.max(1, deadline - Date.now()), 'greeting');
      await client.execute('qmp_capabilities');
      return client;
    } catch (error) {
      client.close();
      throw error;
    }
  }

  /** True once the connection is gone (QEMU exited, or close()); open a new client then. */
  get closed(): boolean {
    return this.socket.destroyed;
  }

  /** Runs a command; rejects with a QmpError on QEMU's error, a closed connection or no answer in time. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(this.closedError(command));
    const id = this.nextId++;
    const message = args ? { execute: command, arguments: args, id } : { execute: command, id };
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new QmpError(`QMP ${command} at ${this.path}: no answer in ${this.commandTimeoutMs} ms`));
      }, this.commandTimeoutMs);
      this.pending.set(id, { command, resolve: resolve as (value: unknown) => void, reject, timer });
      this.socket.write(`${JSON.stringify(message)}\n`);
    });
  }

  async queryStatus(): Promise<QmpStatus> {
    return this.execute<QmpStatus>('query-status');
  }

  /** Starts a machine that was started paused (-S). */
  async cont(): Promise<void> {
    await this.execute('cont');
  }

  /** Presses the ACPI power button; only a guest that handles it will power off. */
  async systemPowerdown(): Promise<void> {
    await this.execute('system_powerdown');
  }

  /** Ends QEMU at once; QEMU may close the socket before answering. */
  async quit(): Promise<void> {
    await this.execute('quit').catch((error: Error) => {
      if (!this.closed) throw error;
    });
  }

  /** The first event (already received or to come) named `name` for which `matches` holds. */
  waitForEvent(name: string, timeoutMs: number, matches: (event: QmpEvent) => boolean = () => true): Promise<QmpEvent> {
    const wanted = (event: QmpEvent): boolean => event.event === name && matches(event);
    const seen = this.events.find(wanted);
    if (seen) return Promise.resolve(seen);
    let listener: ((event: QmpEvent) => void) | undefined;
    const arrived = new Promise<QmpEvent>((resolve) => {
      listener = (event) => {
        if (wanted(event)) resolve(event);
      };
      this.notifier.on('event', listener);
    });
    return this.bounded(arrived, timeoutMs, `event ${name}`)
      .catch((error: Error) => {
        const seenSoFar = this.events.map((event) => event.event).join(', ') || 'none';
        throw new QmpError(`${error.message} (events so far: ${seenSoFar})`);
      })
      .finally(() => {
        if (listener) this.notifier.off('event', listener);
      });
  }

  close(): void {
    this.socket.destroy();
  }

  private async bounded<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new QmpError(`QMP ${what} at ${this.path}: timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private onData(chunk: string): void {
    this.buffered += chunk;
    let newline = this.buffered.indexOf('\n');
    while (newline >= 0) {
      const line = this.buffered.slice(0, newline).trim();
      this.buffered = this.buffered.slice(newline + 1);
      if (line) this.onMessage(JSON.parse(line) as QmpMessage);
      newline = this.buffered.indexOf('\n');
    }
  }

  private onMessage(message: QmpMessage): void {
    if (message.QMP !== undefined) {
      this.greeted();
    } else if (message.event !== undefined) {
      this.events.push(message as QmpEvent);
      this.notifier.emit('event', message);
    } else if (message.id !== undefined) {
      // answers are matched by id: a late answer to a command that timed out is dropped
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (!pending) return;
      clearTimeout(pending.timer);
      if (message.error)
        pending.reject(new QmpError(`QMP ${pending.command}: ${message.error.class}: ${message.error.desc}`));
      else pending.resolve(message.return);
    }
  }

  private onClose(): void {
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(this.closedError(pending.command));
    }
    this.pending.clear();
  }

  private closedError(command: string): QmpError {
    const why = this.closedBecause ? ` (${this.closedBecause.message})` : '';
    return new QmpError(`QMP ${command} at ${this.path}: connection closed${why}`);
  }
}

/** Opens a session, runs `work`, and always closes it. */
export async function withQmp<T>(path: string, timeoutMs: number, work: (client: QmpClient) => Promise<T>): Promise<T> {
  const client = await QmpClient.connect(path, { timeoutMs });
  try {
    return await work(client);
  } finally {
    client.close();
  }
}

/** Connects by the deadline; with waitForSocket, a socket not there yet (or not yet listening) is waited for. */
async function openSocket(path: string, deadline: number, waitForSocket: boolean): Promise<Socket> {
  let notYet: Error | undefined;
  const attempt = async (): Promise<Socket | undefined> => {
    try {
      return await connectOnce(path, Math.max(1, deadline - Date.now()));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (!waitForSocket || (code !== 'ENOENT' && code !== 'ECONNREFUSED')) {
        throw new QmpError(`QMP connect to ${path} failed: ${(error as Error).message}`);
      }
      notYet = error as Error;
      return undefined;
    }
  };
  try {
    return await waitFor(`QMP socket ${path}`, attempt, {
      timeoutMs: Math.max(0, deadline - Date.now()),
      intervalMs: 50,
    });
  } catch (error) {
    if (!(error instanceof WaitTimeoutError)) throw error;
    throw new QmpError(`QMP connect to ${path} failed: ${notYet?.message}`);
  }
}

function connectOnce(path: string, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const timer = setTimeout(() => socket.destroy(new Error(`no connection in ${timeoutMs} ms`)), timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(socket);
    });
    const fail = (error: Error): void => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', fail);
  });
}
