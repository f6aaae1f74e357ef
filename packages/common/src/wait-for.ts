import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  timeoutMs: number;
  /** Pause between two probes (default 100 ms). */
  intervalMs?: number;
  /** Appended to the timeout's message: what the last probe saw. */
  describe?: () => Promise<string> | string;
  /** Gives up early (after one last probe) once this returns a reason, e.g. "the process exited". */
  abortReason?: () => string | null | undefined;
}

/** A probe: a value when what it looks for is there, undefined while it is not (yet). */
export type Probe<T> = () => Promise<T | undefined> | T | undefined;

/** waitFor gave up: `timeoutMs` passed, or `abortReason` gave a reason (then `aborted` holds it). */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly aborted: string | null,
    detail: string,
  ) {
    super(`${aborted ?? `timed out after ${timeoutMs} ms`} waiting for ${what}${detail ? `: ${detail}` : ''}`);
  }
}

/**
 * The one poller: calls `probe` until it returns a value other than undefined, for state only
 * visible by looking (database rows, another process's files or ports, a node's state through
 * the API). Always bounded: throws a WaitTimeoutError naming `what`, why it gave up and
 * `describe()` after timeoutMs or once `abortReason` gives a reason. The probe is called at least
 * once, and once more at or after the deadline. A probe that throws ends the wait with its error.
 */
export async function waitFor<T>(what: string, probe: Probe<T>, options: WaitForOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const reason = options.abortReason?.() ?? null;
    const value = await probe();
    if (value !== undefined) return value;
    if (reason !== null || Date.now() >= deadline) {
      const detail = options.describe ? await options.describe() : '';
      throw new WaitTimeoutError(what, options.timeoutMs, reason, detail);
    }
    await sleep(Math.min(options.intervalMs ?? 100, Math.max(1, deadline - Date.now())));
  }
}

/** `condition` as a waitFor probe: true once it holds, undefined until then. */
export function until(condition: () => Promise<boolean> | boolean): Probe<true> {
  return async () => ((await condition()) ? true : undefined);
}

/**
 * For a wait whose end is enough either way (a best-effort wait before a harder step):
 * `waitFor(...).catch(ignoreTimeout)` resolves undefined on a WaitTimeoutError, rethrows the rest.
 */
export function ignoreTimeout(error: unknown): undefined {
  if (error instanceof WaitTimeoutError) return undefined;
  throw error;
}

/** Rejects with a message naming `what` when `promise` does not settle in time. */
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

/**
 * Runs `fn` over items with at most `limit` in flight; results in item order. The first
 * failure rejects, and no item is started after it.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
