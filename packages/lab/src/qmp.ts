// A tiny QMP (QEMU Machine Protocol) client for the lab harness: JSON lines over a Unix socket.
import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { withTimeout } from '@bmaas/common';

export interface QmpStatus {
  status: string;
  running: boolean;
}

export interface QmpEvent {
  event: string;
  data?: unknown;
  timestamp?: { seconds: number; microseconds: number };
}

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
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
  private closed = false;
  private greeted: () => void = () => {};
  private readonly greeting = new Promise<void>((resolve) => {
    this.greeted = resolve;
  });

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('close', () => this.onClose());
    socket.on('error', () => {}); // surfaced through 'close'
  }

  /** Connects (retrying while QEMU creates the socket) and negotiates capabilities. */
  static async connect(socketPath: string, timeoutMs = 10_000): Promise<QmpClient> {
    const deadline = Date.now() + timeoutMs;
    const client = new QmpClient(await openSocketWithRetry(socketPath, deadline));
    try {
      const left = (): number => Math.max(1, deadline - Date.now());
      await withTimeout(client.greeting, left(), `QMP greeting on ${socketPath}`);
      await withTimeout(client.execute('qmp_capabilities'), left(), `QMP qmp_capabilities on ${socketPath}`);
      return client;
    } catch (error) {
      client.close();
      throw error;
    }
  }

  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`QMP ${command}: connection closed`));
    const id = this.nextId++;
    const message = args ? { execute: command, arguments: args, id } : { execute: command, id };
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { command, resolve: resolve as (value: unknown) => void, reject });
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
    const seenSoFar = (): string => this.events.map((event) => event.event).join(', ') || 'none';
    return withTimeout(arrived, timeoutMs, `QMP event ${name}`)
      .catch((error: Error) => {
        throw new Error(`${error.message} (events so far: ${seenSoFar()})`);
      })
      .finally(() => {
        if (listener) this.notifier.off('event', listener);
      });
  }

  close(): void {
    this.socket.destroy();
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
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (!pending) return;
      if (message.error)
        pending.reject(new Error(`QMP ${pending.command}: ${message.error.class}: ${message.error.desc}`));
      else pending.resolve(message.return);
    }
  }

  private onClose(): void {
    this.closed = true;
    for (const pending of this.pending.values()) pending.reject(new Error(`QMP ${pending.command}: connection closed`));
    this.pending.clear();
  }
}

async function openSocketWithRetry(path: string, deadline: number): Promise<Socket> {
  for (;;) {
    try {
      return await openSocket(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // QEMU creates the socket a moment after it starts
      if (!(code === 'ENOENT' || code === 'ECONNREFUSED') || Date.now() >= deadline) {
        throw new Error(`QMP connect to ${path} failed: ${(error as Error).message}`);
      }
      await sleep(50);
    }
  }
}

function openSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}
