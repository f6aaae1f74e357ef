import type { Logger } from '@bmaas/common';
import type { NewNodeHistory, NodeHistoryStore } from '@bmaas/db';

export interface NodeHistoryWriterOptions {
  store: Pick<NodeHistoryStore, 'append'>;
  logger: Logger;
  /** Hostname of this conductor: every entry names it. */
  conductor: string;
  /** Milliseconds between writes of what was recorded meanwhile. */
  flushIntervalMs?: number;
  /** Entries kept while a write is slow; beyond this new entries are dropped (and counted in the log). */
  maxQueued?: number;
  /** [conductor]node_history: false records nothing. */
  recording?: boolean;
}

/** What a caller records; the conductor and time are added here. */
export type HistoryEvent = Pick<
  NewNodeHistory,
  'nodeId' | 'eventType' | 'severity' | 'event' | 'state' | 'targetProvisionState' | 'durationSeconds'
>;

/**
 * Node history as this conductor records it: recording is a push onto a
 * queue (the boot path records every served configuration, so it must cost
 * nothing there); the queue goes to the database in one INSERT per
 * interval, off the request that recorded it. A failed write is logged and
 * its entries dropped: history never fails or slows the work it describes.
 */
export class NodeHistoryWriter {
  private queue: NewNodeHistory[] = [];
  private dropped = 0;
  private writing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: NodeHistoryWriterOptions) {
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 1000);
    this.timer.unref();
  }

  record(event: HistoryEvent): void {
    if (this.options.recording === false) return;
    if (this.queue.length >= (this.options.maxQueued ?? 10_000)) {
      this.dropped++;
      return;
    }
    this.queue.push(Object.assign({}, event, { conductor: this.options.conductor, createdAt: new Date() }));
  }

  /** Writes what is queued (waiting for a write already under way first). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.dropped > 0) {
      this.options.logger.warn('node history entries dropped: the queue was full', { dropped: this.dropped });
      this.dropped = 0;
    }
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.writing = this.options.store
      .append(batch)
      .catch((error: Error) => {
        this.options.logger.error('could not write node history', { error: error.message, entries: batch.length });
      })
      .finally(() => {
        this.writing = undefined;
      });
    await this.writing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
