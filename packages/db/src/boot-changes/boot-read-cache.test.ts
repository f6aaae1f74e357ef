import { describe, expect, it } from 'vitest';
import { ManualBootChangeSource } from './boot-change-feed.js';
import { BootReadCache } from './boot-read-cache.js';

interface Found {
  node: string;
}

/** A read that counts its calls and answers from a table that tests change. */
function table(rows: Record<string, Found | undefined>) {
  const calls: string[] = [];
  return {
    calls,
    rows,
    read: async (key: string) => {
      calls.push(key);
      return rows[key];
    },
  };
}

function cacheOf(changes: ManualBootChangeSource, maxEntries?: number) {
  return new BootReadCache<Found>({
    changes,
    keysOf: (mac, found) => (found ? [`m:${mac}`, `n:${found.node}`] : [`m:${mac}`]),
    maxEntries,
  });
}

describe('BootReadCache', () => {
  it('keeps reads, found or not, until a change names their key or their node', async () => {
    const changes = new ManualBootChangeSource();
    const cache = cacheOf(changes);
    const db = table({ a: { node: 'n1' }, b: { node: 'n1' }, c: { node: 'n2' } });
    for (const key of ['a', 'b', 'c', 'x', 'a', 'b', 'c', 'x']) await cache.get(key, db.read);
    expect(db.calls).toEqual(['a', 'b', 'c', 'x']);

    changes.announce({ all: false, keys: ['n:n1'] });
    db.rows.x = { node: 'n3' };
    changes.announce({ all: false, keys: ['m:x'] });
    for (const key of ['a', 'b', 'c', 'x']) await cache.get(key, db.read);
    expect(db.calls.slice(4)).toEqual(['a', 'b', 'x']);
    expect(await cache.get('x', db.read)).toEqual({ node: 'n3' });

    changes.announce({ all: true });
    expect(cache.size).toBe(0);
  });

  it('does not keep a read that a change may have raced', async () => {
    const changes = new ManualBootChangeSource();
    const cache = cacheOf(changes);
    const db = table({ a: { node: 'n1' } });
    const racing = cache.get('a', async (key) => {
      const stale = await db.read(key);
      // The change commits and is notified while the stale answer is on its way back.
      db.rows.a = undefined;
      changes.announce({ all: false, keys: ['m:a', 'n:n1'] });
      return stale;
    });
    expect(await racing).toEqual({ node: 'n1' });
    expect(await cache.get('a', db.read)).toBeUndefined();
    expect(db.calls).toEqual(['a', 'a']);
  });

  it('keeps nothing while its source is not live', async () => {
    const changes = new ManualBootChangeSource(false);
    const cache = cacheOf(changes);
    const db = table({ a: { node: 'n1' } });
    await cache.get('a', db.read);
    await cache.get('a', db.read);
    expect(db.calls).toEqual(['a', 'a']);
    expect(cache.size).toBe(0);
  });

  it('drops the oldest entry beyond its bound, with its change keys', async () => {
    const changes = new ManualBootChangeSource();
    const cache = cacheOf(changes, 2);
    const db = table({ a: { node: 'n1' }, b: { node: 'n2' }, c: { node: 'n3' } });
    for (const key of ['a', 'b', 'c']) await cache.get(key, db.read);
    expect(cache.size).toBe(2);
    await cache.get('a', db.read);
    expect(db.calls).toEqual(['a', 'b', 'c', 'a']);
    changes.announce({ all: false, keys: ['n:n3'] });
    expect(cache.size).toBe(1);
  });
});
