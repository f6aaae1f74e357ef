import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ignoreTimeout, type Logger, until, waitFor } from '@bmaas/common';
import { procStat } from './pid-lock.js';

export interface ChildRecord {
  name: string;
  pid: number;
  /** From /proc, to tell the process from a later one given the same PID. */
  startTime?: string;
  /** What asks it to stop (default SIGTERM; PostgreSQL's fast shutdown is SIGINT). */
  stopSignal?: NodeJS.Signals;
}

/**
 * The recorded process is still there: not another process given its PID, and not a zombie
 * whose threads have all exited. A zombie's other threads can still be exiting, and until the
 * last of them has, the process's files stay open: its listening sockets among them, the
 * ports the next stack is about to check.
 */
function alive(child: ChildRecord): boolean {
  try {
    process.kill(child.pid, 0);
  } catch {
    return false;
  }
  const now = procStat(child.pid);
  if (now === undefined) return true;
  if (child.startTime !== undefined && now.startTime !== child.startTime) return false;
  return now.state !== 'Z' || threadCount(child.pid) > 1;
}

/** Threads still listed for `pid` (0 once it is gone). */
function threadCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/** Sends `signal`; SIGKILL goes to the whole process group when the child leads one. */
function send(child: ChildRecord, signal: NodeJS.Signals): void {
  const targets = signal === 'SIGKILL' ? [-child.pid, child.pid] : [child.pid];
  for (const target of targets) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      // Not a group leader, or already gone.
    }
  }
}

/**
 * The stack's children, listed in a file while they run. A stack killed
 * outright (SIGKILL, the OOM killer) cannot stop them; the next start finds
 * them here and stops them before it needs their ports.
 */
export class ChildRegistry {
  constructor(private readonly file: string) {}

  record(children: readonly ChildRecord[]): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const staging = `${this.file}.${process.pid}`;
    writeFileSync(staging, `${JSON.stringify(children)}\n`);
    renameSync(staging, this.file);
  }

  clear(): void {
    rmSync(this.file, { force: true });
  }

  /** Stops the children a previous stack left running (SIGTERM, SIGKILL after graceMs); returns their PIDs. */
  async stopLeftovers(logger: Logger, graceMs: number): Promise<number[]> {
    let recorded: ChildRecord[];
    try {
      recorded = JSON.parse(readFileSync(this.file, 'utf8')) as ChildRecord[];
    } catch {
      return [];
    }
    const leftovers = recorded.filter(alive);
    if (leftovers.length > 0) {
      const list = leftovers.map((c) => `${c.name} ${c.pid}`).join(', ');
      logger.warn(`stopping processes left by a stack that did not stop them: ${list}`);
      for (const child of leftovers) send(child, child.stopSignal ?? 'SIGTERM');
      await waitFor(
        'the left-over processes to stop',
        until(() => !leftovers.some(alive)),
        {
          timeoutMs: graceMs,
        },
      ).catch(ignoreTimeout);
      const stubborn = leftovers.filter(alive);
      for (const child of stubborn) send(child, 'SIGKILL');
      await waitFor(
        'the killed left-over processes to be gone',
        until(() => !stubborn.some(alive)),
        {
          timeoutMs: 2000,
          intervalMs: 50,
        },
      ).catch(ignoreTimeout);
    }
    this.clear();
    return leftovers.map((c) => c.pid);
  }
}
