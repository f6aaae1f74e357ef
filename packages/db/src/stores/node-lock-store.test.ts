import { randomUUID } from 'node:crypto';
import { DuplicateName } from '@bmaas/common';
import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeLockStore } from './node-lock-store.js';
import { NodeStore } from './node-store.js';
import { PortStore } from './port-store.js';

describe('NodeLockStore', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  let locks: NodeLockStore;
  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
    locks = new NodeLockStore(t.db);
  });
  afterAll(() => t.drop());

  it('takes the exclusive lock with one conditional update: exactly one of many concurrent acquirers wins', async () => {
    const node = await nodes.create(newNode());
    const hosts = Array.from({ length: 40 }, (_, i) => `conductor-${i}`);
    const results = await Promise.all(hosts.map((host) => locks.reserve(node.id, host)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = hosts[results.indexOf(true)] as string;
    expect((await nodes.getById(node.id))?.reservation).toBe(winner);
    expect(await locks.release(node.id, 'someone-else')).toBe(false);
    expect(await locks.release(node.id, winner)).toBe(true);
    expect(await locks.reserve(node.id, 'conductor-x')).toBe(true);
    expect(await locks.clearReservations('conductor-x')).toBe(1);
    expect((await nodes.getById(node.id))?.reservation).toBeNull();
  });

  it('takes and releases locks as heap-only updates: no index entry is written', async () => {
    /**
     * This database's cumulative update counts for nodes once they stop moving:
     * a backend flushes its counters within about a second of going idle.
     */
    const settledUpdateCounts = async () => {
      const read = async () => {
        const { rows } = await t.db.raw<{ rows: { updated: string; hot: string }[] }>(
          "select n_tup_upd as updated, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'nodes'",
        );
        return { updated: Number(rows[0]?.updated), hot: Number(rows[0]?.hot) };
      };
      let last = await read();
      for (let quiet = 0, rounds = 0; quiet < 15 && rounds < 100; rounds++) {
        await new Promise((r) => setTimeout(r, 100));
        const now = await read();
        quiet = now.updated === last.updated ? quiet + 1 : 0;
        last = now;
      }
      return last;
    };
    const node = await nodes.create(newNode());
    const before = await settledUpdateCounts();
    for (let i = 0; i < 5; i++) {
      expect(await locks.reserveByUuidWithPorts(node.uuid, 'conductor-hot')).toBeDefined();
      expect(await locks.release(node.id, 'conductor-hot')).toBe(true);
      expect(await locks.reserve(node.id, 'conductor-hot')).toBe(true);
      expect(await locks.release(node.id, 'conductor-hot')).toBe(true);
    }
    const after = await settledUpdateCounts();
    expect(after.updated - before.updated).toBe(20);
    expect(after.hot - before.hot).toBe(20);
  });

  it('reserves by uuid and reads the node with its ports in one statement; one of many concurrent acquirers wins', async () => {
    const node = await nodes.create(newNode());
    const ports = new PortStore(t.db);
    const second = await ports.create({ uuid: randomUUID(), nodeId: node.id, address: '52:54:00:00:aa:02' });
    const first = await ports.create({ uuid: randomUUID(), nodeId: node.id, address: '52:54:00:00:aa:01' });
    const hosts = Array.from({ length: 20 }, (_, i) => `conductor-${i}`);
    const results = await Promise.all(hosts.map((host) => locks.reserveByUuidWithPorts(node.uuid, host)));
    const won = results.filter((result) => result !== undefined);
    expect(won).toHaveLength(1);
    const winner = hosts[results.findIndex((result) => result !== undefined)] as string;
    const stored = await nodes.getById(node.id);
    expect(stored?.reservation).toBe(winner);
    expect(won[0]?.node).toEqual(stored);
    expect(won[0]?.ports).toEqual(await ports.listByNode(node.id));
    expect(won[0]?.ports.map((port) => port.id)).toEqual([second.id, first.id]);
    // Unknown, or not a uuid at all: nothing, like a node taken.
    expect(await locks.reserveByUuidWithPorts('00000000-0000-4000-8000-000000000000', 'x')).toBeUndefined();
    expect(await locks.reserveByUuidWithPorts('not-a-uuid', 'x')).toBeUndefined();
    expect(await locks.release(node.id, winner)).toBe(true);
    expect((await locks.reserveByUuidWithPorts(node.uuid.toUpperCase(), 'conductor-x'))?.node.reservation).toBe(
      'conductor-x',
    );
  });

  it('reads a node with its ports and row version, and takes the lock only at that version', async () => {
    const node = await nodes.create(newNode());
    const ports = new PortStore(t.db);
    await ports.create({ uuid: randomUUID(), nodeId: node.id, address: '52:54:00:00:ab:01' });
    const [read, unknown, junk] = await locks.getManyVersionedByUuidWithPorts([
      node.uuid.toUpperCase(),
      '00000000-0000-4000-8000-000000000000',
      'not-a-uuid',
    ]);
    expect(unknown).toBeUndefined();
    expect(junk).toBeUndefined();
    // The node as every other read gives it: the version travels beside it, not in it.
    expect(read?.node).toEqual(await nodes.getById(node.id));
    expect(read?.ports).toEqual(await ports.listByNode(node.id));
    const version = read?.version as string;
    await nodes.update(node.id, { lastError: 'changed since the read' });
    expect(await locks.updateIfUnreservedVersion(node.id, version, 'conductor-a', { lastError: 'x' })).toBeUndefined();
    const fresh = await locks.getVersionedByUuidWithPorts(node.uuid);
    expect(fresh?.version).not.toBe(version);
    const locked = await locks.updateIfUnreservedVersion(node.id, fresh?.version as string, 'conductor-a', {
      lastError: 'locked by this write',
    });
    expect(locked).toMatchObject({ reservation: 'conductor-a', lastError: 'locked by this write' });
    expect(await locks.release(node.id, 'conductor-a')).toBe(true);
  });

  it('writes under a reservation only while the host holds it, JSON columns and nulls included', async () => {
    const node = await nodes.create(newNode());
    expect(await locks.reserve(node.id, 'conductor-a')).toBe(true);
    const changes = {
      provisionState: 'deploying',
      targetProvisionState: 'active',
      provisionUpdatedAt: new Date('2026-01-02T03:04:05.678Z'),
      lastError: null,
      driverInternalInfo: { steps: [{ step: 'deploy', args: {} }], index: 0 },
      deployStep: { step: 'deploy' },
    };
    const written = await locks.updateReservedBy(node.id, 'conductor-a', changes);
    expect(written).toEqual(await nodes.getById(node.id));
    expect(written).toMatchObject({ ...changes, reservation: 'conductor-a' });
    expect(written?.updatedAt?.getTime()).toBeGreaterThanOrEqual(node.createdAt.getTime());
    expect(await locks.updateReservedBy(node.id, 'conductor-b', { provisionState: 'active' })).toBeUndefined();
    expect((await nodes.getById(node.id))?.provisionState).toBe('deploying');
    // Same column list again (the prepared statement), other values.
    const again = await locks.updateReservedBy(node.id, 'conductor-a', { provisionState: 'wait call-back' });
    expect(again?.provisionState).toBe('wait call-back');
    await nodes.create(newNode({ name: 'n-taken' }));
    await expect(locks.updateReservedBy(node.id, 'conductor-a', { name: 'n-taken' })).rejects.toBeInstanceOf(
      DuplicateName,
    );
    expect(await locks.release(node.id, 'conductor-b')).toBe(false);
    expect(await locks.release(node.id, 'conductor-a')).toBe(true);
    expect(await locks.updateReservedBy(node.id, 'conductor-a', { provisionState: 'active' })).toBeUndefined();
  });
});
