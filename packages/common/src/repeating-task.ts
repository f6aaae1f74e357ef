import type { Logger } from './logging.js';

/**
 * Runs `fn` every intervalMs, never two runs at once (the next run is
 * scheduled when the previous one ends). Timers are unref'd so they never
 * keep a process alive; stop() clears them and waits for a run in progress.
 */
export class RepeatingTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly fn: () => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** Starts the runs; a second start while running changes nothing. */
  start(options: { runNow?: boolean } = {}): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(options.runNow ? 0 : this.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Runs now (waiting for a run in progress first); for start-up and tests. */
  async runOnce(): Promise<void> {
    while (this.running) await this.running;
    this.running = this.fn().catch((error: Error) => {
      this.logger.error(`periodic task ${this.name} failed`, { error: error.message, stack: error.stack });
    });
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(async () => {
      await this.runOnce();
      this.schedule(this.intervalMs);
    }, delayMs);
    this.timer.unref();
  }
}
