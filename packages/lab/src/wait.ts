// Polling waits on log files (serial consoles, dnsmasq logs), always bounded by a timeout.
import { access, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForFileOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Gives up early (after one last read) once this returns a reason, e.g. "qemu exited". */
  abortReason?: () => string | null;
}

export async function readIfExists(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/** Polls a growing file until its contents match pattern. */
export async function waitForFileMatch(
  path: string,
  pattern: RegExp,
  options: WaitForFileOptions,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const reason = options.abortReason?.() ?? null;
    const text = await readIfExists(path);
    const match = text.match(pattern);
    if (match) return match;
    const why = reason ?? (Date.now() >= deadline ? `timed out after ${options.timeoutMs} ms` : null);
    if (why) throw new Error(`${path}: no match for ${pattern} (${why}); last lines:\n${tail(text, 15)}`);
    await sleep(options.intervalMs ?? 100);
  }
}

/** Polls until `path` exists (e.g. the socket a process creates once it listens). */
export async function waitForPath(path: string, options: WaitForFileOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const reason = options.abortReason?.() ?? null;
    const present = await access(path).then(
      () => true,
      () => false,
    );
    if (present) return;
    const why = reason ?? (Date.now() >= deadline ? `timed out after ${options.timeoutMs} ms` : null);
    if (why) throw new Error(`${path} did not appear (${why})`);
    await sleep(options.intervalMs ?? 50);
  }
}

export function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Rejects with a clear message when promise does not settle in time. */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
