import { randomUUID } from 'node:crypto';
import { createSilentLogger } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newNode } from '../stores/fixtures.test-support.js';
import { NodeStore } from '../stores/node-store.js';
import { PortStore } from '../stores/port-store.js';
import { type BootChange, macKey, nodeKey, PgBootChangeFeed, parseBootChange } from './boot-change-feed.js';

/** The changes a feed reports, and a way to wait for the next one that matches. */
function record(feed: PgBootChangeFeed) {
  const seen: BootChange[] = [];
  const waiters: Array<{ match: (c: BootChange) => boolean; resolve: (c: BootChange) => void }> = [];
  feed.subscribe((change) => {
    seen.push(change);
    for (const waiter of [...waiters]) {
      if (waiter.match(change)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(change);
      }
    }
  });
  return {
    seen,
    next(match: (c: BootChange) => boolean, timeoutMs = 5000): Promise<BootChange> {
      const earlier = seen.find(match);
      if (earlier) return Promise.resolve(earlier);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no such change was notified')), timeoutMs);
        waiters.push({
          match,
          resolve: (c) => {
            clearTimeout(timer);
            resolve(c);
          },
        });
      });
    },
    clear() {
      seen.length = 0;
    },
  };
}

const naming = (key: string) => (change: BootChange) => !change.all && change.keys.includes(key);

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('parseBootChange', () => {
  it('reads keys, and "*" or nothing as everything', () => {
    expect(parseBootChange('n:a m:b')).toEqual({ all: false, keys: ['n:a', 'm:b'] });
    expect(parseBootChange('*')).toEqual({ all: true });
    expect(parseBootChange(undefined)).toEqual({ all: true });
  });
});

describe('PgBootChangeFeed (real PostgreSQL, the migration triggers)', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  let ports: PortStore;
  let feed: PgBootChangeFeed;
  let changes: ReturnType<typeof record>;

  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
    ports = new PortStore(t.db);
    feed = new PgBootChangeFeed({
      connection: t.url,
      applicationName: 'bmaas-feed-test',
      logger: createSilentLogger(),
      reconnectDelayMs: 50,
    });
    changes = record(feed);
    await feed.start();
  });
  afterEach(() => changes.clear());
  afterAll(async () => {
    await feed.close();
    await t.drop();
  });

  it('is live once listening, having reported everything changed', async () => {
    expect(feed.live).toBe(true);
    expect(feed.epoch).toBeGreaterThan(0);
  });

  it('names the node of every node update and delete, and nothing for a rolled-back one', async () => {
    const node = await nodes.create(newNode());
    await nodes.update(node.id, { provisionState: 'manageable' });
    await changes.next(naming(nodeKey(node.uuid)));
    changes.clear();

    await t.db
      .transaction(async (trx) => {
        await trx('nodes').where({ id: node.id }).update({ provision_state: 'available' });
        throw new Error('roll back');
      })
      .catch(() => {});
    await nodes.destroy(node.id);
    await changes.next(naming(nodeKey(node.uuid)));
    // The rolled-back update sent nothing: the delete's notification is the only one.
    expect(changes.seen.filter(naming(nodeKey(node.uuid)))).toHaveLength(1);
  });

  it('names the MAC and the node of a port inserted, moved to another address or node, and deleted', async () => {
    const a = await nodes.create(newNode());
    const b = await nodes.create(newNode());
    const port = await ports.create({ uuid: randomUUID(), address: '52:54:00:aa:00:01', nodeId: a.id });
    await changes.next((c) => naming(macKey('52:54:00:aa:00:01'))(c) && naming(nodeKey(a.uuid))(c));

    await ports.update(port.id, { address: '52:54:00:aa:00:02', nodeId: b.id });
    const moved = await changes.next(naming(macKey('52:54:00:aa:00:02')));
    expect(moved).toEqual({
      all: false,
      keys: expect.arrayContaining([
        macKey('52:54:00:aa:00:01'),
        macKey('52:54:00:aa:00:02'),
        nodeKey(a.uuid),
        nodeKey(b.uuid),
      ]),
    });

    changes.clear();
    await ports.destroy(port.id);
    await changes.next((c) => naming(macKey('52:54:00:aa:00:02'))(c) && naming(nodeKey(b.uuid))(c));
  });

  it('reports everything for a change too large to list, and for TRUNCATE', async () => {
    const many = Array.from({ length: 300 }, () => newNode());
    for (const node of many) await nodes.create(node);
    await t
      .db('nodes')
      .whereIn(
        'uuid',
        many.map((n) => n.uuid),
      )
      .update({ description: 'bulk' });
    await changes.next((c) => c.all);

    changes.clear();
    await t.db.raw('truncate node_history');
    await t.db.raw('truncate ports cascade');
    await changes.next((c) => c.all);
  });

  it('when its connection is cut: not live, everything changed, then listening again', async () => {
    const before = feed.epoch;
    await t.db.raw(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'bmaas-feed-test'`);
    await changes.next((c) => c.all);
    await until(() => feed.live && feed.epoch >= before + 2);
    const node = await nodes.create(newNode());
    await nodes.update(node.id, { provisionState: 'manageable' });
    await changes.next(naming(nodeKey(node.uuid)));
  });
});
