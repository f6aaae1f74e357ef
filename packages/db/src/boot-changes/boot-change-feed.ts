import type { Logger } from '@bmaas/common';
import pg from 'pg';
import { BOOT_CHANGE_TRIGGERS, BOOT_CHANGES_CHANNEL } from '../migrations/20261201000400_boot_change_notifications.js';

/**
 * What changed for the boot path: the keys touched (`n:<node uuid>`,
 * `m:<MAC address>`), or everything (a change too large to list, a TRUNCATE,
 * or notifications lost while the feed was down).
 */
export type BootChange = { all: true } | { all: false; keys: readonly string[] };

/**
 * Where caches of boot path reads learn that what they hold may be stale.
 * A cache may keep a read only while the feed is `live`, and only when
 * `epoch` is the same when the read ends as when it began: a change that
 * lands in between may not have been seen by the read.
 */
export interface BootChangeSource {
  readonly live: boolean;
  readonly epoch: number;
  /** Calls `listener` for every change from now on (synchronously, in order); returns the unsubscribe. */
  subscribe(listener: (change: BootChange) => void): () => void;
}

/** The key of a node in a BootChange. */
export function nodeKey(uuid: string): string {
  return `n:${uuid.toLowerCase()}`;
}

/** The key of a MAC address in a BootChange (stored addresses are lower case). */
export function macKey(address: string): string {
  return `m:${address.toLowerCase()}`;
}

/** Parses a notification's payload (see the migration): `*` or space-separated keys. */
export function parseBootChange(payload: string | undefined): BootChange {
  if (payload === undefined || payload === '*' || payload === '') return { all: true };
  return { all: false, keys: payload.split(' ') };
}

/** The subscribers and epoch every BootChangeSource keeps. */
class BootChangeListeners {
  epoch = 0;
  private readonly listeners = new Set<(change: BootChange) => void>();

  subscribe(listener: (change: BootChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(change: BootChange): void {
    this.epoch++;
    for (const listener of this.listeners) listener(change);
  }
}

export interface PgBootChangeFeedOptions {
  /** [database]connection. */
  connection: string;
  /** application_name of the listening connection, e.g. "bmaas-api-listen". */
  applicationName: string;
  logger: Logger;
  /** First wait before connecting again after the connection was lost; doubles up to 30 s. */
  reconnectDelayMs?: number;
}

/**
 * The BootChangeSource of a service process: one dedicated PostgreSQL
 * connection that LISTENs on the migration's channel. It is live only while
 * that connection is up and the triggers exist; when the connection drops,
 * everything is reported changed (notifications may have been missed) and
 * it connects again with a growing delay. Once listening again, everything
 * is reported changed once more, then caches may fill again.
 */
export class PgBootChangeFeed implements BootChangeSource {
  private readonly listeners = new BootChangeListeners();
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private delayMs: number;

  constructor(private readonly options: PgBootChangeFeedOptions) {
    this.delayMs = options.reconnectDelayMs ?? 1000;
  }

  get live(): boolean {
    return this.listening;
  }

  get epoch(): number {
    return this.listeners.epoch;
  }

  subscribe(listener: (change: BootChange) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  /** Connects and listens; resolves once listening or once the first attempt failed (it keeps trying). */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.lost();
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.connection,
      application_name: this.options.applicationName,
      keepAlive: true,
    });
    this.client = client;
    client.on('notification', (message) => {
      if (client === this.client && this.listening) this.listeners.emit(parseBootChange(message.payload));
    });
    const dropped = (error?: Error) => {
      if (client !== this.client) return;
      this.options.logger.warn('lost the database connection that listens for node and port changes', {
        error: error?.message,
      });
      this.lost();
      client.end().catch(() => {});
      this.retryLater();
    };
    client.on('error', dropped);
    client.on('end', () => dropped());
    try {
      await client.connect();
      await client.query(`listen ${BOOT_CHANGES_CHANNEL}`);
      const { rows } = await client.query<{ tgname: string }>(
        'select tgname from pg_trigger where tgname = any($1::text[])',
        [BOOT_CHANGE_TRIGGERS],
      );
      if (rows.length !== BOOT_CHANGE_TRIGGERS.length) {
        // Without the triggers nothing would ever say a read went stale: caching stays off.
        this.options.logger.warn('the schema has no change notifications (run the migrations): boot reads not cached');
        return;
      }
    } catch (error) {
      dropped(error as Error);
      return;
    }
    if (client !== this.client || this.closed) return;
    this.delayMs = this.options.reconnectDelayMs ?? 1000;
    // Whatever changed while no one listened is unknown: start from nothing.
    this.listeners.emit({ all: true });
    this.listening = true;
    this.options.logger.info('listening for node and port changes: boot path reads are cached');
  }

  private lost(): void {
    this.client = undefined;
    const was = this.listening;
    this.listening = false;
    if (was) this.listeners.emit({ all: true });
  }

  private retryLater(): void {
    if (this.closed || this.retryTimer) return;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}

/**
 * The BootChangeSource for tests and for processes without a database feed:
 * changes are announced by hand, `live` is set by hand.
 */
export class ManualBootChangeSource implements BootChangeSource {
  private readonly listeners = new BootChangeListeners();

  constructor(public live = true) {}

  get epoch(): number {
    return this.listeners.epoch;
  }

  subscribe(listener: (change: BootChange) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  announce(change: BootChange): void {
    this.listeners.emit(change);
  }
}
