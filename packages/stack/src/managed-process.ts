import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ManagedProcessOptions {
  name: string;
  script: string;
  args?: string[];
  /** Options of node itself, before the script: V8 flags that size the heap cannot be set once it runs. */
  nodeFlags?: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Receives each output line of the process, already prefixed with its name. */
  output: (line: string) => void;
  /**
   * Keep a pipe to the child's standard input open. The stack never writes to
   * it: the child sees it close when the stack is gone, however it went.
   */
  stdinPipe?: boolean;
  /** Sees each standard output line first; a line it returns true for is not shown. */
  takeStdoutLine?: (line: string) => boolean;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A Node.js child process of the stack, in a process group of its own: a
 * Ctrl-C on the terminal reaches the stack only, and the stack alone decides
 * when and in which order its children stop.
 */
export class ManagedProcess {
  private readonly child: ChildProcess;
  readonly exited: Promise<ExitStatus>;
  private status: ExitStatus | undefined;

  constructor(private readonly options: ManagedProcessOptions) {
    this.child = spawn(process.execPath, [...(options.nodeFlags ?? []), options.script, ...(options.args ?? [])], {
      env: options.env,
      stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    // A failed spawn (e.g. EMFILE) ends as an 'exit'-less 'error'; treat it as an exit.
    this.exited = new Promise((resolve) => {
      const done = (status: ExitStatus) => {
        this.status ??= status;
        resolve(this.status);
      };
      this.child.on('exit', (code, signal) => done({ code, signal }));
      this.child.on('error', (error) => {
        options.output(`[${options.name}] cannot run ${options.script}: ${error.message}`);
        if (this.child.pid === undefined) done({ code: 1, signal: null });
      });
    });
    this.child.stdin?.on('error', () => {
      // EPIPE once the child is gone: nothing is ever written, nothing to report.
    });
    const show = (line: string) => options.output(`[${options.name}] ${line}`);
    if (this.child.stdout) {
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        if (!options.takeStdoutLine?.(line)) show(line);
      });
    }
    if (this.child.stderr) createInterface({ input: this.child.stderr }).on('line', show);
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

  /**
   * SIGTERM to the process, then SIGKILL to its whole process group after
   * `graceMs`. Resolves when the process is gone.
   */
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

  /** SIGKILL to the process group, at once and synchronously (usable in an 'exit' handler). */
  kill(): void {
    if (this.status || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  private signal(signal: NodeJS.Signals): void {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}
