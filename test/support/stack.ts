import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@bmaas/common';

/**
 * Starts real bmaas processes (N conductors and, when it is built, the API)
 * on a test database with free loopback ports, and stops them all by PID,
 * also when a start fails or the test process exits.
 */

export const CONDUCTOR_MAIN = fileURLToPath(new URL('../../packages/conductor/dist/main.js', import.meta.url));
export const API_MAIN = fileURLToPath(new URL('../../packages/api/dist/main.js', import.meta.url));

/** Short timings so failures and takeovers show within seconds; any of them may be overridden. */
export const FAST_TIMINGS: Readonly<Record<string, string>> = {
  BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '0.5',
  BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '3',
  BMAAS_CONDUCTOR__CHECK_PROVISION_STATE_INTERVAL: '1',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_ATTEMPTS: '3',
  BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_INTERVAL: '0.1',
  BMAAS_DEFAULT__HASH_RING_RESET_INTERVAL: '1',
};

/**
 * For suites that never stop a conductor on purpose: a heartbeat may be late by seconds while
 * QEMU machines of another suite take both cores, and a 3 s timeout then calls every
 * conductor dead ("No alive conductor is registered").
 */
export const PATIENT_HEARTBEATS: Readonly<Record<string, string>> = {
  BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '30',
};

/** One parsed JSON log line of a process. */
export type LogLine = Record<string, unknown> & { message?: string };

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const RAW_LINES_KEPT = 200;

/** A child process of the stack, with its log lines. */
export class StackProcess {
  readonly lines: LogLine[] = [];
  private readonly raw: string[] = [];
  private readonly events = new EventEmitter();
  private readonly exit: Promise<ExitStatus>;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    /** The port it serves (JSON-RPC for a conductor, REST for the API). */
    readonly port: number,
  ) {
    this.exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream?.on('data', (chunk: Buffer) => {
        const parts = (pending + chunk.toString()).split('\n');
        pending = parts.pop() ?? '';
        for (const line of parts) this.take(line);
      });
    }
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  exited(): Promise<ExitStatus> {
    return this.exit;
  }

  /** Sends a signal to this process only (by PID). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves with the exit status. */
  async stop(graceMs = 5000): Promise<ExitStatus> {
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    try {
      return await this.exit;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The first log line (already seen or to come) matching; fails when the process exits or time runs out. */
  waitForLine(matches: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine> {
    const seen = this.lines.find(matches);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const done = (error: Error | undefined, line?: LogLine): void => {
        clearTimeout(timer);
        this.events.off('line', onLine);
        if (error) reject(error);
        else resolve(line as LogLine);
      };
      const onLine = (line: LogLine): void => {
        if (matches(line)) done(undefined, line);
      };
      const timer = setTimeout(
        () => done(new Error(`${this.name}: no matching log line within ${timeoutMs} ms\n${this.tail(20)}`)),
        timeoutMs,
      );
      this.events.on('line', onLine);
      void this.exit.then((status) =>
        done(
          new Error(
            `${this.name} exited (${status.code ?? status.signal}) before the expected log line\n${this.tail(20)}`,
          ),
        ),
      );
    });
  }

  /** The last raw output lines, for failure messages. */
  tail(count: number): string {
    return this.raw.slice(-count).join('\n');
  }

  private take(line: string): void {
    if (line.trim() === '') return;
    this.raw.push(line);
    if (this.raw.length > RAW_LINES_KEPT) this.raw.shift();
    let parsed: LogLine;
    try {
      parsed = JSON.parse(line) as LogLine;
    } catch {
      parsed = { message: line, unparsed: true };
    }
    this.lines.push(parsed);
    this.events.emit('line', parsed);
  }
}

/** A conductor of the stack: its registered hostname is 127.0.0.1:<port>. */
export class ConductorProcess extends StackProcess {
  get hostname(): string {
    return `127.0.0.1:${this.port}`;
  }
}

export interface StackOptions {
  /** Test database (createTestDatabase().url). */
  databaseUrl: string;
  /** How many conductors to start. */
  conductors: number;
  /** BMAAS_* settings for every process, over FAST_TIMINGS. */
  env?: Record<string, string>;
  /** Per-conductor settings, over `env`. */
  conductorEnv?: (index: number) => Record<string, string>;
  /** Start the API too: default when packages/api/dist/main.js exists. */
  api?: boolean;
  /** The API's port; default a free one. Give one when the conductors must know the API's URL before it starts. */
  apiPort?: number;
  /** Bound on each process's start. */
  startTimeoutMs?: number;
  /** Config files every process reads (--config-file), e.g. an install's credentials.conf as `npm start` passes it. */
  configFiles?: readonly string[];
}

function baseEnvironment(): NodeJS.ProcessEnv {
  // Our processes read only what we give them: drop every BMAAS_* of the test runner.
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BMAAS_')));
}

function httpStatus(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(undefined));
    req.setTimeout(1000, () => req.destroy());
  });
}

export class Stack {
  readonly conductors: ConductorProcess[] = [];
  api: StackProcess | undefined;
  private started = 0;
  private readonly killOnExit = (): void => {
    for (const p of this.processes()) p.signal('SIGKILL');
  };

  constructor(private readonly options: StackOptions) {
    process.once('exit', this.killOnExit);
  }

  get apiUrl(): string | undefined {
    return this.api ? `http://127.0.0.1:${this.api.port}` : undefined;
  }

  processes(): StackProcess[] {
    return [...this.conductors, ...(this.api ? [this.api] : [])];
  }

  /** The command line of a bmaas process: its main and the config files. */
  private argv(main: string): string[] {
    return [main, ...(this.options.configFiles ?? []).flatMap((file) => ['--config-file', file])];
  }

  private environment(extra: Record<string, string>): NodeJS.ProcessEnv {
    return {
      ...baseEnvironment(),
      BMAAS_DATABASE__CONNECTION: this.options.databaseUrl,
      BMAAS_DATABASE__MAX_POOL_SIZE: '5',
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
      ...FAST_TIMINGS,
      ...this.options.env,
      ...extra,
    };
  }

  /** Starts one more conductor (the next index) and waits until it has registered. */
  async startConductor(): Promise<ConductorProcess> {
    const index = this.started++;
    const port = await freePort();
    const env = this.environment({
      BMAAS_DEFAULT__HOST: '127.0.0.1',
      BMAAS_JSON_RPC__HOST_IP: '127.0.0.1',
      BMAAS_JSON_RPC__PORT: String(port),
      ...this.options.conductorEnv?.(index),
    });
    const child = spawn(process.execPath, this.argv(CONDUCTOR_MAIN), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const conductor = new ConductorProcess(`conductor-${index}`, child, port);
    this.conductors.push(conductor);
    await conductor.waitForLine((l) => l.message === 'conductor started', this.options.startTimeoutMs ?? 20_000);
    return conductor;
  }

  /** Starts the API and waits until it answers GET /. */
  async startApi(): Promise<StackProcess> {
    const port = this.options.apiPort ?? (await freePort());
    const env = this.environment({ BMAAS_API__HOST_IP: '127.0.0.1', BMAAS_API__PORT: String(port) });
    const child = spawn(process.execPath, this.argv(API_MAIN), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const api = new StackProcess('api', child, port);
    this.api = api;
    await waitFor(
      'the API to answer GET /',
      async () => {
        if (!api.running) throw new Error(`api exited before answering\n${api.tail(20)}`);
        return (await httpStatus(`http://127.0.0.1:${port}/`)) === 200 ? true : undefined;
      },
      { timeoutMs: this.options.startTimeoutMs ?? 20_000, describe: () => api.tail(20) },
    );
    return api;
  }

  /** Stops every process by PID: SIGTERM, SIGKILL after the grace period. */
  async stop(graceMs = 5000): Promise<void> {
    await Promise.all(this.processes().map((p) => p.stop(graceMs)));
    process.off('exit', this.killOnExit);
  }
}

/**
 * Starts the stack; on any failure stops what already started before
 * rethrowing, so no process outlives a failed start.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  if (!existsSync(CONDUCTOR_MAIN))
    throw new Error(`${CONDUCTOR_MAIN} is missing: build first (npx tsc -b packages/conductor)`);
  const stack = new Stack(options);
  try {
    await Promise.all(Array.from({ length: options.conductors }, () => stack.startConductor()));
    if (options.api ?? existsSync(API_MAIN)) await stack.startApi();
    return stack;
  } catch (error) {
    await stack.stop(1000);
    throw error;
  }
}
