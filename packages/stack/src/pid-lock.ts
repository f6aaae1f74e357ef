import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The one reader of /proc/<pid>/stat: its fields after the command name (which may hold spaces
 * and parentheses), the state (field 3) first; undefined when the process is gone or there is no /proc.
 */
export function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** A process as /proc/<pid>/stat shows it; undefined when it is gone or there is no /proc. */
export function procStat(pid: number): { state: string; ppid: number; startTime: string } | undefined {
  const fields = procStatFields(pid);
  if (!fields) return undefined;
  return { state: fields[0] as string, ppid: Number(fields[1]), startTime: fields[19] as string };
}

/** Whether `pid` runs: it is there and not a zombie (a killed process stays one until reaped). */
export function processRunning(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/**
 * When a process started, as the kernel counts it (/proc/<pid>/stat, field 22);
 * undefined where there is no /proc. Told apart from the recorded one, it
 * shows that a PID from a crashed run now belongs to another process.
 */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.startTime;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but not ours to signal; ESRCH: gone.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PID of the live process that holds the lock file, if any. The file holds the
 * PID on its first line and the holder's start time on the second; a file from
 * a crashed run (its PID gone, or reused by another process) holds nothing.
 */
export function lockHolder(file: string): number | undefined {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(lines[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return undefined;
  const recorded = lines[1]?.trim();
  const current = procStat(pid);
  if (current?.state === 'Z' || (recorded && current && recorded !== current.startTime)) return undefined;
  return pid;
}

/**
 * One running stack per state directory: a PID file created exclusively
 * (O_EXCL); a stale one is removed and the creation tried once more.
 */
export function acquireLock(file: string): { release(): void } | { heldBy: number } {
  mkdirSync(dirname(file), { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n${processStartTime(process.pid) ?? ''}\n`, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = lockHolder(file);
      if (holder) return { heldBy: holder };
      if (attempt > 0) throw new Error(`cannot create ${file}: it keeps reappearing`);
      rmSync(file, { force: true });
    }
  }
  return {
    release: () => {
      if (lockHolder(file) === undefined) rmSync(file, { force: true });
    },
  };
}
