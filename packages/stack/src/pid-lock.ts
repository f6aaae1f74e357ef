import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** PID of a live process that holds the lock file, if any. */
export function lockHolder(file: string): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: alive but not ours to signal; ESRCH: a stale file.
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** One running stack per state directory: a PID file, taken atomically (O_EXCL after a stale check). */
export function acquireLock(file: string): { release(): void } | { heldBy: number } {
  const holder = lockHolder(file);
  if (holder) return { heldBy: holder };
  mkdirSync(dirname(file), { recursive: true });
  rmSync(file, { force: true });
  try {
    writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
  } catch {
    const racer = lockHolder(file);
    if (racer) return { heldBy: racer };
    throw new Error(`cannot create ${file}`);
  }
  return {
    release: () => {
      if (lockHolder(file) === undefined) rmSync(file, { force: true });
    },
  };
}
