import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { until, waitFor } from '@bmaas/common';

/** A server the bench started (nginx, the node:http file server), stopped by PID. */
export class ServedProcess {
  private readonly exit: Promise<void>;
  private readonly output: string[] = [];

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly baseUrl: string,
  ) {
    this.exit = new Promise((resolve) => child.once('exit', () => resolve()));
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on('data', (chunk: Buffer) => {
        this.output.push(chunk.toString());
        if (this.output.length > 50) this.output.shift();
      });
    }
  }

  static spawn(name: string, command: string, args: string[], baseUrl: string): ServedProcess {
    return new ServedProcess(name, spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] }), baseUrl);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves once `probePath` answers (any HTTP status); fails when the process exits or time runs out. */
  async waitUntilServing(probePath: string, timeoutMs = 10_000): Promise<void> {
    await waitFor(
      `${this.name} to answer ${probePath}`,
      until(() => answers(`${this.baseUrl}${probePath}`)),
      {
        timeoutMs,
        abortReason: () => (this.running ? null : `${this.name} exited during start-up`),
        describe: () => this.output.join('').slice(-2000),
      },
    );
  }

  /** SIGTERM (nginx: fast shutdown), SIGKILL after graceMs. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exit;
    clearTimeout(timer);
  }
}

function answers(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.setTimeout(1000, () => req.destroy());
  });
}
