import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** Starts a process: node:child_process's spawn, or one that runs it inside a lab namespace. */
export type Spawner = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

const spawnOnHost: Spawner = (command, args, options) => spawn(command, [...args], options);

/** One parsed JSON log line of a process (`{ message, unparsed: true }` for a line that is not JSON). */
export type LogLine = Record<string, unknown> & { message?: string };

export interface StackProcessOptions {
  name: string;
  script: string;
  args?: readonly string[];
  /** Options of node itself, before the script: V8 flags that size the heap cannot be set once it runs. */
  nodeFlags?: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Receives each output line of the process, already prefixed with its name. */
  output?: (line: string) => void;
  /** Every output line is also appended to this file. */
  logFile?: string;
  /** Keep every output line, parsed, in `lines` (for tests; a long-running stack does not). */
  keepLines?: boolean;
  /**
   * Keep a pipe to the child's standard input open. Nothing is written to it: the child sees
   * it close when its parent is gone, however it went.
   */
  stdinPipe?: boolean;
  /** Sees each standard output line first; a line it returns true for is not shown nor kept. */
  takeStdoutLine?: (line: string) => boolean;
  /**
   * In a process group of its own (default): a Ctrl-C on the terminal reaches the parent only,
   * which alone decides when and in which order its children stop; SIGKILL reaches the group.
   */
  detached?: boolean;
  /** How to start it (default: on this host). */
  spawn?: Spawner;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const TAIL_LINES = 200;

/**
 * A Node.js process of the stack (the API, a conductor, the database process, or `npm start`
 * itself under test): its output prefixed, written to a log file and/or kept, its exit
 * awaited, and stopped by PID.
 */
export class StackProcess {
  /** Parsed output lines, when `keepLines`. */
  readonly lines: LogLine[] = [];
  readonly exited: Promise<ExitStatus>;
  private readonly child: ChildProcess;
  private readonly raw: string[] = [];
  private readonly watchers = new Set<(line: LogLine) => void>();
  private readonly log: WriteStream | undefined;
  private status: ExitStatus | undefined;

  constructor(private readonly options: StackProcessOptions) {
    const detached = options.detached ?? true;
    this.child = (options.spawn ?? spawnOnHost)(
      process.execPath,
      [...(options.nodeFlags ?? []), options.script, ...(options.args ?? [])],
      { env: options.env, stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached },
    );
    this.log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
    // A failed spawn (e.g. EMFILE) ends as an 'exit'-less 'error'; treat it as an exit.
    this.exited = new Promise((resolve) => {
      const done = (status: ExitStatus) => {
        this.status ??= status;
        this.log?.end();
        resolve(this.status);
      };
      this.child.on('exit', (code, signal) => done({ code, signal }));
      this.child.on('error', (error) => {
        this.take(`cannot run ${options.script}: ${error.message}`);
        if (this.child.pid === undefined) done({ code: 1, signal: null });
      });
    });
    this.child.stdin?.on('error', () => {
      // EPIPE once the child is gone: nothing is ever written, nothing to report.
    });
    if (this.child.stdout) {
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        if (!options.takeStdoutLine?.(line)) this.take(line);
      });
    }
    if (this.child.stderr) createInterface({ input: this.child.stderr }).on('line', (line) => this.take(line));
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.status === undefined;
  }

  get exitStatus(): ExitStatus | undefined {
    return this.status;
  }

  /** Sends `signal` to this process only (by PID). */
  signal(signal: NodeJS.Signals): void {
    if (this.status || this.child.pid === undefined) return;
    try {
      process.kill(this.child.pid, signal);
    } catch {
      // Already gone.
    }
  }

  /** SIGTERM, then SIGKILL (to the process group when it leads one) after `graceMs`; resolves when it is gone. */
  async stop(graceMs: number): Promise<ExitStatus> {
    if (this.status) return this.status;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.kill(), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL to the process (and its group when it leads one), at once and synchronously (usable in an 'exit' handler). */
  kill(): void {
    if (this.status || this.child.pid === undefined) return;
    try {
      process.kill((this.options.detached ?? true) ? -this.child.pid : this.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  /** The first kept line (already seen or to come) matching; fails when the process exits or time runs out. */
  waitForLine(matches: (line: LogLine) => boolean, timeoutMs: number): Promise<LogLine> {
    const seen = this.lines.find(matches);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const done = (error: Error | undefined, line?: LogLine): void => {
        clearTimeout(timer);
        this.watchers.delete(onLine);
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
      this.watchers.add(onLine);
      void this.exited.then((status) =>
        done(
          new Error(
            `${this.name} exited (${status.code ?? status.signal}) before the expected log line\n${this.tail(20)}`,
          ),
        ),
      );
    });
  }

  /** The last output lines, for failure messages. */
  tail(count: number): string {
    return this.raw.slice(-count).join('\n');
  }

  private take(line: string): void {
    this.options.output?.(`[${this.name}] ${line}`);
    this.log?.write(`${line}\n`);
    this.raw.push(line);
    if (this.raw.length > TAIL_LINES) this.raw.shift();
    if (!this.options.keepLines && this.watchers.size === 0) return;
    if (line.trim() === '') return;
    let parsed: LogLine;
    try {
      parsed = JSON.parse(line) as LogLine;
    } catch {
      parsed = { message: line, unparsed: true };
    }
    if (this.options.keepLines) this.lines.push(parsed);
    for (const watcher of this.watchers) watcher(parsed);
  }
}
