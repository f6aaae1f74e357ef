import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createRootLogger, createSilentLogger } from '@bmaas/common';
import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BootPathChangeFeed, type BootPathListener, CHANGES_PER_SLICE } from './boot-path-change-feed.js';
import type { BootPathChanges } from './stores/boot-path-change-store.js';
import { BootPathChangeStore } from './stores/boot-path-change-store.js';
import { NodeStore } from './stores/node-store.js';
import { PortStore } from './stores/port-store.js';

/** A listener that records what it was told. */
class RecordingListener implements BootPathListener {
  resets = 0;
  batches: BootPathChanges[] = [];
  reset(): void {
    this.resets++;
  }
  changed(changes: BootPathChanges): void {
    this.batches.push(changes);
  }
  /** Node ids told since the last call, sorted. */
  take(): number[] {
    return [...new Set(this.batches.splice(0).flatMap((b) => b.nodeIds))].sort((a, b) => a - b);
  }
}

describe('BootPathChangeFeed on the boot_path_changes log', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  let ports: PortStore;
  let store: BootPathChangeStore;
  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
    ports = new PortStore(t.db);
    store = new BootPathChangeStore(t.db);
  });
  afterAll(() => t.drop());

  function feedFor(listener: BootPathListener, now?: () => number): BootPathChangeFeed {
    return new BootPathChangeFeed({ store, listener, intervalMs: 50, logger: createSilentLogger(), now });
  }

  it('starts with a reset, then hands over the nodes and MACs each write touched, once', async () => {
    const listener = new RecordingListener();
    const feed = feedFor(listener);
    expect(feed.following).toBe(false);
    await feed.poll();
    expect(listener.resets).toBe(1);
    expect(feed.following).toBe(true);

    const node = await nodes.create(newNode());
    const port = await ports.create({ uuid: randomUUID(), address: '52:54:00:aa:00:01', nodeId: node.id });
    await feed.poll();
    expect(listener.take()).toEqual([node.id]);

    await nodes.update(node.id, { provisionState: 'wait call-back' });
    await ports.update(port.id, { address: '52:54:00:aa:00:02' });
    await feed.poll();
    expect(listener.take()).toEqual([node.id]);

    // Nothing new: nothing handed over again.
    await feed.poll();
    expect(listener.batches).toEqual([]);

    // A port moved to another node names both nodes.
    const other = await nodes.create(newNode());
    await feed.poll();
    listener.take();
    await ports.update(port.id, { nodeId: other.id });
    await feed.poll();
    expect(listener.take()).toEqual([node.id, other.id]);

    await nodes.destroy(node.id);
    await feed.poll();
    expect(listener.take()).toEqual([node.id]);
    expect(listener.resets).toBe(1);
  });

  it('hands a bulk change over in slices', async () => {
    const listener = new RecordingListener();
    const feed = feedFor(listener);
    await feed.poll();
    const { rows } = await t.db.raw<{ rows: Array<{ id: number }> }>(
      `insert into nodes (uuid, driver, boot_interface, deploy_interface, power_interface, management_interface)
       select gen_random_uuid(), 'fake-hardware', 'fake', 'fake', 'fake', 'fake' from generate_series(1, ?) returning id`,
      [CHANGES_PER_SLICE * 2 + 10],
    );
    await t.db('nodes').update({ extra: '{"bulk": true}' });
    await feed.poll();
    expect(listener.batches.length).toBeGreaterThanOrEqual(3);
    expect(listener.batches.every((b) => b.nodeIds.length <= CHANGES_PER_SLICE)).toBe(true);
    expect(listener.take()).toEqual(expect.arrayContaining(rows.map((r) => r.id)));
  });

  it('hands over a change whose transaction was still open at a poll once it commits', async () => {
    const listener = new RecordingListener();
    const feed = feedFor(listener);
    await feed.poll();
    const node = await nodes.create(newNode());
    await feed.poll();
    listener.take();

    const trx = await t.db.transaction();
    await trx('nodes').where({ id: node.id }).update({ provision_state: 'deploying' });
    // A later transaction commits first: its xid is above the open one's.
    const other = await nodes.create(newNode());
    await ports.create({ uuid: randomUUID(), address: '52:54:00:aa:01:01', nodeId: other.id });
    await feed.poll();
    expect(listener.take()).toEqual([other.id]);
    await trx.commit();
    await feed.poll();
    expect(listener.take()).toEqual([node.id]);
  });

  it('reads everything again when the server restarted since (the log is unlogged)', async () => {
    const position = await store.position();
    const same = await store.changesSince(position);
    expect(same.changes.everything).toBe(false);
    const restarted = await store.changesSince({ ...position, serverStarted: '2000-01-01 00:00:00+00' });
    expect(restarted.changes.everything).toBe(true);
  });

  it('resets on a truncation, on a failed read, and after too long without reading', async () => {
    let clock = 1_000_000;
    const listener = new RecordingListener();
    const feed = feedFor(listener, () => clock);
    await feed.poll();
    expect(listener.resets).toBe(1);

    await t.db.raw('truncate table node_history, ports, nodes cascade');
    await feed.poll();
    expect(listener.resets).toBe(2);

    // A few intervals without a read: not following, but the next read goes on from where it was.
    clock += 2_000;
    expect(feed.following).toBe(false);
    await feed.poll();
    expect(listener.resets).toBe(2);
    expect(feed.following).toBe(true);

    // Half the log's retention without a read: entries may be gone, so it reads everything again.
    clock += 150_000;
    expect(feed.following).toBe(false);
    await feed.poll();
    expect(listener.resets).toBe(3);
    expect(feed.following).toBe(true);

    const broken = new BootPathChangeFeed({
      store: {
        position: () => store.position(),
        changesSince: () => Promise.reject(new Error('connection terminated')),
        prune: () => store.prune(300),
      },
      listener,
      intervalMs: 50,
      logger: createSilentLogger(),
    });
    await broken.poll();
    expect(broken.following).toBe(true);
    const resets = listener.resets;
    await broken.poll();
    expect(broken.following).toBe(false);
    expect(listener.resets).toBe(resets);
    await broken.poll();
    // The next poll that reads starts again with a reset.
    expect(listener.resets).toBe(resets + 1);
  });

  it('warns once when the log stays unreadable past a blip, and says when it is readable again', async () => {
    let clock = 5_000_000;
    let broken = false;
    const stream = new PassThrough();
    const lines: Array<{ level: string; message: string }> = [];
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    const feed = new BootPathChangeFeed({
      store: {
        position: () => (broken ? Promise.reject(new Error('connection refused')) : store.position()),
        changesSince: (p) => (broken ? Promise.reject(new Error('connection refused')) : store.changesSince(p)),
        prune: () => Promise.resolve(0),
      },
      listener: new RecordingListener(),
      intervalMs: 200,
      logger: createRootLogger({ level: 'info', format: 'json', stream }),
      now: () => clock,
    });
    await feed.poll();
    broken = true;
    clock += 1_000;
    await feed.poll();
    clock += 5_000;
    await feed.poll();
    expect(lines).toEqual([]);
    clock += 5_000;
    await feed.poll();
    await feed.poll();
    broken = false;
    await feed.poll();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['warn', 'boot path change log unreadable: boot requests read the database until it is back'],
      ['info', 'boot path change log readable again'],
    ]);
  });

  it('prunes old entries, but none of a transaction that a running one may not see yet', async () => {
    const count = async () => Number((await t.db('boot_path_changes').count({ n: '*' }))[0]?.n);
    // A transaction older than the next entries, as a slow poller's or a long migration's would be.
    const open = await t.db.transaction();
    try {
      await open.raw('select pg_current_xact_id()');
      const node = await nodes.create(newNode());
      await nodes.update(node.id, { provisionState: 'manageable' });
      expect(await store.prune(3600)).toBe(0);
      await t.db('boot_path_changes').update({ noted_at: t.db.raw("now() - interval '2 hours'") });
      await store.prune(3600);
      const kept = await t.db('boot_path_changes').where({ node_id: node.id }).count({ n: '*' });
      expect(Number(kept[0]?.n)).toBe(1);
    } finally {
      await open.rollback();
    }
    // Once nothing older runs (transactions of other databases of the cluster count too): every old entry goes.
    await expect
      .poll(
        async () => {
          await store.prune(3600);
          return count();
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe(0);
  });

  it('polls on its timer once started, and stops', async () => {
    const listener = new RecordingListener();
    const feed = feedFor(listener);
    feed.start();
    const node = await nodes.create(newNode());
    await nodes.update(node.id, { provisionState: 'manageable' });
    const deadline = Date.now() + 5000;
    while (!listener.batches.some((b) => b.nodeIds.includes(node.id)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await feed.stop();
    expect(listener.resets).toBe(1);
    expect(listener.take()).toContain(node.id);
  });
});
