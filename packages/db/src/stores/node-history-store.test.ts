import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type NewNodeHistory, NodeHistoryStore } from './node-history-store.js';
import { NodeStore } from './node-store.js';

const DAY_MS = 24 * 3600 * 1000;

let t: TestDatabase;
let nodes: NodeStore;
let history: NodeHistoryStore;
beforeAll(async () => {
  t = await createTestDatabase();
  nodes = new NodeStore(t.db);
  history = new NodeHistoryStore(t.db);
});
afterAll(() => t.drop());

describe('NodeHistoryStore.prune', () => {
  // Pruning is over every node's entries: each test starts from none.
  beforeEach(async () => {
    await t.db('node_history').del();
  });

  /** `count` entries for the node, the first `old` of them `ageDays` old, the rest new; events e0, e1, … in order. */
  async function entries(nodeId: number, count: number, old = 0, ageDays = 10): Promise<void> {
    const now = Date.now();
    const rows: NewNodeHistory[] = Array.from({ length: count }, (_, i) => ({
      nodeId,
      conductor: 'c1',
      eventType: 'provisioning',
      severity: 'info',
      event: `e${i}`,
      createdAt: new Date(i < old ? now - ageDays * DAY_MS : now),
    }));
    // One row per statement keeps ids in the order of the events.
    for (const row of rows) await history.append([row]);
  }

  const events = async (nodeId: number) =>
    (await history.list(nodeId, { limit: 100, sortDir: 'asc' })).map((entry) => entry.event);

  it("keeps each node's newest entries, oldest go first, at most batchCount per run", async () => {
    const a = await nodes.create(newNode());
    const b = await nodes.create(newNode());
    await entries(a.id, 6);
    await entries(b.id, 2);
    expect(await history.prune({ maxEntries: 3, minimumDays: 0, batchCount: 2 })).toBe(2);
    expect(await events(a.id)).toEqual(['e2', 'e3', 'e4', 'e5']);
    expect(await history.prune({ maxEntries: 3, minimumDays: 0, batchCount: 100 })).toBe(1);
    expect(await events(a.id)).toEqual(['e3', 'e4', 'e5']);
    expect(await events(b.id)).toEqual(['e0', 'e1']);
    expect(await history.prune({ maxEntries: 3, minimumDays: 0, batchCount: 100 })).toBe(0);
    expect(await history.prune({ maxEntries: 0, minimumDays: 0, batchCount: 0 })).toBe(0);
  });

  it('keeps entries younger than minimumDays whatever maxEntries says', async () => {
    const node = await nodes.create(newNode());
    await entries(node.id, 5, 3, 10);
    expect(await history.prune({ maxEntries: 1, minimumDays: 5, batchCount: 100 })).toBe(3);
    expect(await events(node.id)).toEqual(['e3', 'e4']);
    expect(await history.prune({ maxEntries: 1, minimumDays: 0, batchCount: 100 })).toBe(1);
    expect(await events(node.id)).toEqual(['e4']);
  });
});

describe('NodeHistoryStore.append', () => {
  it('writes every field of a batch, uuids of version 7 in the order of the entries', async () => {
    const node = await nodes.create(newNode());
    const at = new Date('2026-11-30T10:00:00.123Z');
    const before = Date.now();
    await history.append([
      { nodeId: node.id, conductor: 'c1', eventType: 'boot-config', severity: 'info', event: 'first', createdAt: at },
      {
        nodeId: node.id,
        conductor: null,
        eventType: 'provisioning',
        severity: 'error',
        event: 'second',
        user: 'admin',
      },
      { nodeId: node.id, conductor: 'c2', eventType: 'power', severity: 'info', event: 'it said "no", then \\ ✓' },
    ]);
    const listed = await history.list(node.id, { limit: 10, sortDir: 'asc' });
    expect(
      listed.map(({ conductor, eventType, severity, event, user }) => ({
        conductor,
        eventType,
        severity,
        event,
        user,
      })),
    ).toEqual([
      { conductor: 'c1', eventType: 'boot-config', severity: 'info', event: 'first', user: null },
      { conductor: null, eventType: 'provisioning', severity: 'error', event: 'second', user: 'admin' },
      { conductor: 'c2', eventType: 'power', severity: 'info', event: 'it said "no", then \\ ✓', user: null },
    ]);
    expect(listed[0]?.createdAt.toISOString()).toBe(at.toISOString());
    // Entries without a time get the time of the write.
    expect(listed[1]?.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const uuids = listed.map((entry) => entry.uuid);
    for (const uuid of uuids)
      expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...uuids].sort()).toEqual(uuids);
    expect(await history.get(node.id, uuids[1] as string)).toMatchObject({ event: 'second', user: 'admin' });
  });

  it("drops the entries of a node deleted meanwhile and keeps the others'", async () => {
    const kept = await nodes.create(newNode());
    const gone = await nodes.create(newNode());
    await nodes.destroy(gone.id);
    await history.append([
      { nodeId: gone.id, conductor: 'c1', eventType: 'boot-config', severity: 'info', event: 'lost' },
      { nodeId: kept.id, conductor: 'c1', eventType: 'boot-config', severity: 'info', event: 'kept' },
    ]);
    expect((await history.list(kept.id, { limit: 10, sortDir: 'asc' })).map((entry) => entry.event)).toEqual(['kept']);
    expect(await t.db('node_history').where({ node_id: gone.id }).first()).toBeUndefined();
  });

  it('writes nothing for no entries', async () => {
    await expect(history.append([])).resolves.toBeUndefined();
  });
});
