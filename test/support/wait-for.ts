import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` until it returns a value other than undefined, for state only
 * visible by looking (database rows, another process's files). Always bounded:
 * throws naming `what` and the last probe's description after timeoutMs.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; describe?: () => Promise<string> | string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) {
      const detail = options.describe ? `: ${await options.describe()}` : '';
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}${detail}`);
    }
    await sleep(options.intervalMs ?? 100);
  }
}

/** Runs `fn` over items with at most `limit` in flight; results in item order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  });
  await Promise.all(workers);
  return results;
}
