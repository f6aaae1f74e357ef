import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ManagedProcessOptions {
  name: string;
  script: string;
  args?: string[];
  env: NodeJS.ProcessEnv;
  /** Receives each output line of the process, already prefixed with its name. */
  output: (line: string) => void;
}

/** A Node.js child process of the stack, stopped by PID with SIGTERM then SIGKILL. */
export class ManagedProcess {
  private readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private done = false;

  constructor(private readonly options: ManagedProcessOptions) {
    this.child = spawn(process.execPath, [options.script, ...(options.args ?? [])], {
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => options.output(`[${options.name}] ${line}`));
    }
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.done = true;
        resolve({ code, signal });
      });
    });
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return !this.done;
  }

  /** SIGTERM, then SIGKILL after `graceMs`. Resolves when the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.done) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
