/**
 * At most `limit` calls in flight per key, the others queued in order: what a
 * fragile device (a BMC) is driven through. run(key, fn) starts fn when a
 * place for its key is free and settles as fn does; a failure frees the place
 * like a success. Keys with nothing running or queued are forgotten.
 */
export class KeyedLimiter {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a whole number ≥ 1, got ${limit}`);
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    await this.acquire(key);
    try {
      return await fn();
    } finally {
      this.release(key);
    }
  }

  /** Calls in flight for `key` (tests and logs). */
  inFlight(key: string): number {
    return this.running.get(key) ?? 0;
  }

  private acquire(key: string): Promise<void> {
    const count = this.running.get(key) ?? 0;
    if (count < this.limit) {
      this.running.set(key, count + 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(key) ?? [];
      queue.push(resolve);
      this.waiting.set(key, queue);
    });
  }

  private release(key: string): void {
    const queue = this.waiting.get(key);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(key);
    // The place goes straight to the next one waiting: the count stays.
    if (next) {
      next();
      return;
    }
    const count = (this.running.get(key) ?? 1) - 1;
    if (count === 0) this.running.delete(key);
    else this.running.set(key, count);
  }
}
