/** First wait before restarting a process that exited. */
export const FIRST_RESTART_DELAY_MS = 1000;
/** Longest wait between restarts. */
export const MAX_RESTART_DELAY_MS = 30_000;
/** A process that ran this long before exiting starts again from the first delay. */
export const STABLE_RUN_MS = 60_000;

/**
 * Exponential backoff per process name: 1 s, 2 s, 4 s … up to 30 s while a
 * process keeps exiting soon after it starts, back to 1 s once it has run a
 * minute. A crash loop costs little; a rare crash is repaired at once.
 */
export class RestartBackoff {
  private readonly failures = new Map<string, number>();

  delayAfterExit(name: string, ranForMs: number): number {
    const previous = ranForMs >= STABLE_RUN_MS ? 0 : (this.failures.get(name) ?? 0);
    this.failures.set(name, previous + 1);
    return Math.min(FIRST_RESTART_DELAY_MS * 2 ** previous, MAX_RESTART_DELAY_MS);
  }
}
