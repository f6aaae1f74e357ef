import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { waitFor, withTimeout } from '@bmaas/common';
import { type ExitStatus, processRunning, procStat, StackProcess } from '@bmaas/stack';

/**
 * One run of the built stack launcher (`packages/stack/dist/main.js`, what
 * `npm start` runs) in a process group of its own, as a terminal would run it,
 * with its output, exit status and process tree: a StackProcess of the one launcher.
 */

export const STACK_MAIN = fileURLToPath(new URL('../../packages/stack/dist/main.js', import.meta.url));

export class StackRun {
  output = '';
  private readonly process: StackProcess;

  constructor(args: readonly string[], env: NodeJS.ProcessEnv) {
    this.process = new StackProcess({
      name: 'stack',
      script: STACK_MAIN,
      args,
      env,
      output: (line) => {
        this.output += `${line.slice('[stack] '.length)}\n`;
      },
    });
  }

  get exited(): Promise<ExitStatus> {
    return this.process.exited;
  }

  get pid(): number {
    return this.process.pid as number;
  }

  get running(): boolean {
    return this.process.running;
  }

  /** Resolves when the output matches; fails when the process exits first or time runs out. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return waitFor(`${pattern} in the stack's output`, async () => this.output.match(pattern) ?? undefined, {
      timeoutMs,
      abortReason: () => (this.running ? null : 'the stack exited'),
      describe: () => `\n${this.tail()}`,
    });
  }

  /** Exit status, or a failure naming the timeout; SIGKILLs the group when it is late. */
  async waitForExit(timeoutMs: number): Promise<ExitStatus> {
    try {
      return await withTimeout(this.exited, timeoutMs, 'the stack exiting');
    } catch (error) {
      this.killGroup();
      throw new Error(`${(error as Error).message}:\n${this.tail()}`);
    }
  }

  /** Ctrl-C on a terminal: SIGINT to every process of the foreground group. */
  interruptGroup(): void {
    process.kill(-this.pid, 'SIGINT');
  }

  signal(signal: NodeJS.Signals): void {
    process.kill(this.pid, signal);
  }

  /** SIGKILL to the whole group, also after the stack itself is gone. */
  killGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  tail(lines = 40): string {
    return this.output.split('\n').slice(-lines).join('\n');
  }
}

/** Every live descendant of `root` (children, their children, …), from /proc. */
export function descendants(root: number): number[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      const stat = procStat(Number(name));
      return stat && stat.state !== 'Z' ? [{ pid: Number(name), ppid: stat.ppid }] : [];
    });
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const s of all) {
      if (s.ppid === parent) {
        found.push(s.pid);
        queue.push(s.pid);
      }
    }
  }
  return found;
}

/** The PIDs of `pids` that still exist (zombies count as gone: they hold nothing). */
export function stillRunning(pids: readonly number[]): number[] {
  return pids.filter(processRunning);
}

/** The commands of the given processes, for failure messages. */
export function commandLines(pids: readonly number[]): string[] {
  return pids.map((pid) => {
    try {
      return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')}`;
    } catch {
      return `${pid}: (gone)`;
    }
  });
}

/** The environment of a stack run from `stateDir`: none of the test runner's BMAAS_*, JSON logs. */
export function stackEnvironment(
  stateDir: string,
  databasePort: number,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BMAAS_')));
  return {
    ...env,
    BMAAS_DEFAULT__STATE_PATH: stateDir,
    BMAAS_DATABASE__EMBEDDED_PORT: String(databasePort),
    BMAAS_DEFAULT__LOG_FORMAT: 'json',
    ...extra,
  };
}

/** The PIDs the banner names: the stack's children and the postgres server. */
export function bannerPids(run: StackRun): Map<string, number> {
  const line = run.output.match(/^ {2}PIDs +(.*)$/m)?.[1] ?? '';
  return new Map([...line.matchAll(/([\w-]+) (\d+)/g)].map((m) => [m[1] as string, Number(m[2])]));
}

/** The Authorization header of the user `npm start` made for the state directory `stateDir`. */
export function installLogin(stateDir: string): string {
  const password = readFileSync(`${stateDir}/credentials/api-password`, 'utf8').trim();
  return `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
}
