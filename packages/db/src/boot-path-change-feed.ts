import { type Logger, RepeatingTask } from '@bmaas/common';
import type { BootPathChangeStore, BootPathChanges, BootPathPosition } from './stores/boot-path-change-store.js';

/** Most node ids handed to a listener at once. */
export const CHANGES_PER_SLICE = 500;

/** How long the log may stay unreadable before a warning is logged. */
const OUTAGE_WORTH_A_WARNING_MS = 10_000;

/** What follows the feed: a cache of boot-path reads. */
export interface BootPathListener {
  /** Everything may have changed (start, truncation, a gap in the log): drop or read again all held. */
  reset(): Promise<void> | void;
  /** These nodes (or their ports) changed since the previous call. */
  changed(changes: BootPathChanges): Promise<void> | void;
}

export interface BootPathChangeFeedOptions {
  store: Pick<BootPathChangeStore, 'position' | 'changesSince' | 'prune'>;
  listener: BootPathListener;
  /** Milliseconds between polls ([database]boot_path_poll_interval). */
  intervalMs: number;
  logger: Logger;
  /** Seconds the log keeps an entry; a poller that could not read for half of it starts again. Default 300. */
  retentionSeconds?: number;
  now?: () => number;
}

/**
 * Follows the boot_path_changes log for one process: polls it every
 * intervalMs and hands each batch of changes to the listener, one call at a
 * time (the next poll waits for the listener). Until the first position is
 * taken, after a failed poll, and while the log may have a gap, the feed is
 * not `following`: listeners must then not answer from what they hold.
 * Each process also prunes the log now and then (any one doing it is enough).
 */
export class BootPathChangeFeed {
  /** Where the next read starts; undefined before the first and after a failed one (not following). */
  private position: BootPathPosition | undefined;
  private lastRead = 0;
  private lastPrune = 0;
  private warned = false;
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly polls: RepeatingTask;

  constructor(private readonly options: BootPathChangeFeedOptions) {
    this.retentionMs = (options.retentionSeconds ?? 300) * 1000;
    this.now = options.now ?? Date.now;
    this.polls = new RepeatingTask('boot path change log', options.intervalMs, () => this.poll(), options.logger);
  }

  /**
   * True while what listeners hold is at most a few polls behind the
   * database: the last read succeeded, within five intervals and a second (a
   * database that hangs, or an event loop too busy to poll, makes listeners
   * fall back to reading it).
   */
  get following(): boolean {
    return this.position !== undefined && this.now() - this.lastRead < this.options.intervalMs * 5 + 1000;
  }

  /** Starts polling; the first poll (snapshot, then the listener's reset) runs at once. */
  start(): void {
    this.polls.start({ runNow: true });
  }

  /** Stops polling and waits for a poll in progress. */
  stop(): Promise<void> {
    return this.polls.stop();
  }

  /** One poll now (tests; start() runs them on a timer). */
  async poll(): Promise<void> {
    const { store, listener, logger } = this.options;
    try {
      // After half the log's retention without a read, entries may be gone: start again.
      if (this.position === undefined || this.now() - this.lastRead >= this.retentionMs / 2) {
        // The position first, then the listener's full read: what commits in between is in the next poll.
        const position = await store.position();
        await listener.reset();
        this.position = position;
      } else {
        const { position, changes } = await store.changesSince(this.position);
        if (changes.everything) {
          await listener.reset();
        } else {
          // A bulk change (thousands of nodes enrolled) goes in slices, the event loop free between them.
          for (let start = 0; start < changes.nodeIds.length; start += CHANGES_PER_SLICE) {
            if (start > 0) await new Promise((resolve) => setImmediate(resolve));
            await listener.changed({ ...changes, nodeIds: changes.nodeIds.slice(start, start + CHANGES_PER_SLICE) });
          }
        }
        this.position = position;
      }
      this.lastRead = this.now();
      if (this.warned) logger.info('boot path change log readable again');
      this.warned = false;
    } catch (error) {
      this.position = undefined;
      // A blip is not worth a warning; an outage that outlasts one is, once (the database's own errors say more).
      if (this.warned) return;
      const message = 'boot path change log unreadable: boot requests read the database until it is back';
      if (this.now() - this.lastRead >= OUTAGE_WORTH_A_WARNING_MS) {
        this.warned = true;
        logger.warn(message, { error: (error as Error).message });
      } else logger.debug(message, { error: (error as Error).message });
      return;
    }
    if (this.now() - this.lastPrune > this.retentionMs / 4) {
      this.lastPrune = this.now();
      await store.prune(this.retentionMs / 1000).catch((error: unknown) => {
        logger.debug('pruning the boot path change log failed', { error: (error as Error).message });
      });
    }
  }
}

/** The [database] options of the boot path's caches. */
export interface BootPathCacheConfig {
  boot_path_cache: boolean;
  boot_path_poll_interval: number;
}

/**
 * A feed (not started yet) with the listener `listenerFor` builds (it is told how to
 * ask whether the feed follows the log), or undefined when
 * [database]boot_path_cache is off: the one wiring of the API and the
 * conductors.
 */
export function followBootPath<L extends BootPathListener>(
  store: BootPathChangeFeedOptions['store'],
  config: BootPathCacheConfig,
  logger: Logger,
  listenerFor: (following: () => boolean) => L,
): { feed: BootPathChangeFeed; listener: L } | undefined {
  if (!config.boot_path_cache) return undefined;
  let feed: BootPathChangeFeed | undefined;
  const listener = listenerFor(() => feed?.following ?? false);
  feed = new BootPathChangeFeed({ store, listener, intervalMs: config.boot_path_poll_interval * 1000, logger });
  return { feed, listener };
}
