import type { BootChange, BootChangeSource } from './boot-change-feed.js';

export interface BootReadCacheOptions<V> {
  changes: BootChangeSource;
  /** The keys of BootChange (`n:…`, `m:…`) that make the read of `key` stale, given what it returned. */
  keysOf(key: string, value: V | undefined): readonly string[];
  /** Most entries kept; the oldest goes first. */
  maxEntries?: number;
}

interface Entry<V> {
  value: V | undefined;
  keys: readonly string[];
}

/**
 * A read of the boot path (a MAC's node, a node with its ports), kept until
 * a change notification names it. Reads that find nothing are kept too (an
 * unknown MAC asks again in a loop). A read is kept only when the source was
 * live, and no change arrived, from before the read to after it; otherwise
 * it is answered and forgotten. With the source down nothing is kept and
 * every read goes to the database: slower, never stale.
 */
export class BootReadCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** Change key -> cache keys whose entries it invalidates. */
  private readonly byChangeKey = new Map<string, Set<string>>();
  private readonly maxEntries: number;

  constructor(private readonly options: BootReadCacheOptions<V>) {
    this.maxEntries = options.maxEntries ?? 200_000;
    options.changes.subscribe((change) => this.apply(change));
  }

  get size(): number {
    return this.entries.size;
  }

  /** The kept read of `key`, or `read(key)`'s answer (kept when no change could have raced it). */
  async get(key: string, read: (key: string) => Promise<V | undefined>): Promise<V | undefined> {
    const entry = this.entries.get(key);
    if (entry !== undefined) return entry.value;
    const { changes } = this.options;
    const epoch = changes.epoch;
    const value = await read(key);
    if (changes.live && changes.epoch === epoch && !this.entries.has(key)) this.keep(key, value);
    return value;
  }

  private keep(key: string, value: V | undefined): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
    }
    const keys = this.options.keysOf(key, value);
    this.entries.set(key, { value, keys });
    for (const changeKey of keys) {
      let cached = this.byChangeKey.get(changeKey);
      if (!cached) {
        cached = new Set();
        this.byChangeKey.set(changeKey, cached);
      }
      cached.add(key);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    for (const changeKey of entry.keys) {
      const cached = this.byChangeKey.get(changeKey);
      cached?.delete(key);
      if (cached?.size === 0) this.byChangeKey.delete(changeKey);
    }
  }

  private apply(change: BootChange): void {
    if (change.all) {
      this.entries.clear();
      this.byChangeKey.clear();
      return;
    }
    for (const changeKey of change.keys) {
      const cached = this.byChangeKey.get(changeKey);
      if (!cached) continue;
      for (const key of [...cached]) this.drop(key);
    }
  }
}
