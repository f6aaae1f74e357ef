import { randomUUID } from 'node:crypto';
import { DuplicateName, InvalidParameterValue, NodeAlreadyExists } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newNode } from './fixtures.test-support.js';
import { type NodeChanges, NodeStore, type PeriodicNodeFilter } from './node-store.js';
import { PortStore } from './port-store.js';

describe('NodeStore', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
  });
  afterAll(() => t.drop());

  it('creates nodes in enroll with camelCase fields and JSON columns', async () => {
    const node = await nodes.create(newNode({ name: 'n-create', driverInfo: { deploy_kernel: 'k' } }));
    expect(node).toMatchObject({
      name: 'n-create',
      provisionState: 'enroll',
      driverInfo: { deploy_kernel: 'k' },
      driverInternalInfo: {},
      maintenance: false,
      reservation: null,
      conductorGroup: '',
    });
    expect(node.createdAt).toBeInstanceOf(Date);
    expect(await nodes.getByUuid(node.uuid)).toEqual(node);
    expect(await nodes.getByName('n-create')).toEqual(node);
    expect(await nodes.getById(node.id)).toEqual(node);
  });

  it('refuses duplicate names and uuids with domain errors', async () => {
    const node = await nodes.create(newNode({ name: 'n-dup' }));
    await expect(nodes.create(newNode({ name: 'n-dup' }))).rejects.toBeInstanceOf(DuplicateName);
    await expect(nodes.create(newNode({ uuid: node.uuid }))).rejects.toBeInstanceOf(NodeAlreadyExists);
  });

  it('updates with compare-and-set on expected values', async () => {
    const node = await nodes.create(newNode());
    const moved = await nodes.update(node.id, { provisionState: 'verifying' }, { provisionState: 'enroll' });
    expect(moved?.provisionState).toBe('verifying');
    expect(moved?.updatedAt).toBeInstanceOf(Date);
    expect(await nodes.update(node.id, { provisionState: 'manageable' }, { provisionState: 'enroll' })).toBeUndefined();
    expect((await nodes.getById(node.id))?.provisionState).toBe('verifying');
  });

  it('takes the exclusive lock with one conditional update: exactly one of many concurrent acquirers wins', async () => {
    const node = await nodes.create(newNode());
    const hosts = Array.from({ length: 40 }, (_, i) => `conductor-${i}`);
    const results = await Promise.all(hosts.map((host) => nodes.reserve(node.id, host)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = hosts[results.indexOf(true)] as string;
    expect((await nodes.getById(node.id))?.reservation).toBe(winner);
    expect(await nodes.release(node.id, 'someone-else')).toBe(false);
    expect(await nodes.release(node.id, winner)).toBe(true);
    expect(await nodes.reserve(node.id, 'conductor-x')).toBe(true);
    expect(await nodes.clearReservations('conductor-x')).toBe(1);
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
      expect(await nodes.reserveByUuidWithPorts(node.uuid, 'conductor-hot')).toBeDefined();
      expect(await nodes.release(node.id, 'conductor-hot')).toBe(true);
      expect(await nodes.reserve(node.id, 'conductor-hot')).toBe(true);
      expect(await nodes.release(node.id, 'conductor-hot')).toBe(true);
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
    const results = await Promise.all(hosts.map((host) => nodes.reserveByUuidWithPorts(node.uuid, host)));
    const won = results.filter((result) => result !== undefined);
    expect(won).toHaveLength(1);
    const winner = hosts[results.findIndex((result) => result !== undefined)] as string;
    const stored = await nodes.getById(node.id);
    expect(stored?.reservation).toBe(winner);
    expect(won[0]?.node).toEqual(stored);
    expect(won[0]?.ports).toEqual(await ports.listByNode(node.id));
    expect(won[0]?.ports.map((port) => port.id)).toEqual([second.id, first.id]);
    // Unknown, or not a uuid at all: nothing, like a node taken.
    expect(await nodes.reserveByUuidWithPorts('00000000-0000-4000-8000-000000000000', 'x')).toBeUndefined();
    expect(await nodes.reserveByUuidWithPorts('not-a-uuid', 'x')).toBeUndefined();
    expect(await nodes.release(node.id, winner)).toBe(true);
    expect((await nodes.reserveByUuidWithPorts(node.uuid.toUpperCase(), 'conductor-x'))?.node.reservation).toBe(
      'conductor-x',
    );
  });

  it('reads a node with its ports and row version, and takes the lock only at that version', async () => {
    const node = await nodes.create(newNode());
    const ports = new PortStore(t.db);
    await ports.create({ uuid: randomUUID(), nodeId: node.id, address: '52:54:00:00:ab:01' });
    const [read, unknown, junk] = await nodes.getManyVersionedByUuidWithPorts([
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
    expect(await nodes.updateIfUnreservedVersion(node.id, version, 'conductor-a', { lastError: 'x' })).toBeUndefined();
    const fresh = await nodes.getVersionedByUuidWithPorts(node.uuid);
    expect(fresh?.version).not.toBe(version);
    const locked = await nodes.updateIfUnreservedVersion(node.id, fresh?.version as string, 'conductor-a', {
      lastError: 'locked by this write',
    });
    expect(locked).toMatchObject({ reservation: 'conductor-a', lastError: 'locked by this write' });
    expect(await nodes.release(node.id, 'conductor-a')).toBe(true);
  });

  it('writes under a reservation only while the host holds it, JSON columns and nulls included', async () => {
    const node = await nodes.create(newNode());
    expect(await nodes.reserve(node.id, 'conductor-a')).toBe(true);
    const changes = {
      provisionState: 'deploying',
      targetProvisionState: 'active',
      provisionUpdatedAt: new Date('2026-01-02T03:04:05.678Z'),
      lastError: null,
      driverInternalInfo: { steps: [{ step: 'deploy', args: {} }], index: 0 },
      deployStep: { step: 'deploy' },
    };
    const written = await nodes.updateReservedBy(node.id, 'conductor-a', changes);
    expect(written).toEqual(await nodes.getById(node.id));
    expect(written).toMatchObject({ ...changes, reservation: 'conductor-a' });
    expect(written?.updatedAt?.getTime()).toBeGreaterThanOrEqual(node.createdAt.getTime());
    expect(await nodes.updateReservedBy(node.id, 'conductor-b', { provisionState: 'active' })).toBeUndefined();
    expect((await nodes.getById(node.id))?.provisionState).toBe('deploying');
    // Same column list again (the prepared statement), other values.
    const again = await nodes.updateReservedBy(node.id, 'conductor-a', { provisionState: 'wait call-back' });
    expect(again?.provisionState).toBe('wait call-back');
    await expect(nodes.updateReservedBy(node.id, 'conductor-a', { name: 'n-create' })).rejects.toBeInstanceOf(
      DuplicateName,
    );
    expect(await nodes.release(node.id, 'conductor-b')).toBe(false);
    expect(await nodes.release(node.id, 'conductor-a')).toBe(true);
    expect(await nodes.updateReservedBy(node.id, 'conductor-a', { provisionState: 'active' })).toBeUndefined();
  });

  it('lists with filters and keyset pagination, stable under ties and NULLs', async () => {
    const group = 'paging';
    const created = [];
    for (let i = 0; i < 7; i++) {
      created.push(await nodes.create(newNode({ conductorGroup: group, name: i % 2 ? `page-${i}` : null })));
    }
    const seen: string[] = [];
    let marker: string | undefined;
    for (;;) {
      const page = await nodes.list({ conductorGroup: group, limit: 3, marker, sortKey: 'name', sortDir: 'asc' });
      seen.push(...page.map((n) => n.uuid));
      if (page.length < 3) break;
      marker = page.at(-1)?.uuid;
    }
    expect(seen.sort()).toEqual(created.map((n) => n.uuid).sort());
    const desc = await nodes.list({ conductorGroup: group, limit: 100, sortKey: 'created_at', sortDir: 'desc' });
    expect(desc.map((n) => n.uuid)).toEqual(created.map((n) => n.uuid).reverse());
    expect(
      await nodes.list({ conductorGroup: 'PAGING', maintenance: true, limit: 10, sortKey: 'id', sortDir: 'asc' }),
    ).toEqual([]);
    await expect(
      nodes.list({ limit: 1, sortKey: 'reservation; drop table nodes', sortDir: 'asc' }),
    ).rejects.toBeInstanceOf(InvalidParameterValue);
  });

  it('finds nodes by state and by (group, drivers)', async () => {
    const node = await nodes.create(newNode({ conductorGroup: 'state-q' }));
    await nodes.update(node.id, { provisionState: 'wait call-back' });
    const waiting = await nodes.listForPeriodicTask('state-q', ['fake-hardware'], {
      provisionStateIn: ['wait call-back'],
    });
    expect(waiting.map((n) => n.uuid)).toEqual([node.uuid]);
    expect(await nodes.listForPeriodicTask('state-q', ['fake-hardware'], { provisionStateIn: ['deploying'] })).toEqual(
      [],
    );
    expect(await nodes.listForPeriodicTask('state-q', ['fake-hardware'])).toEqual([
      { id: node.id, uuid: node.uuid, driver: 'fake-hardware', conductorGroup: 'state-q' },
    ]);
    expect(await nodes.listForPeriodicTask('state-q', ['ipmi'])).toEqual([]);
  });

  it('narrows what a periodic task lists in SQL', async () => {
    const inserted = await t
      .db('conductors')
      .insert([
        { hostname: 'c-periodic', drivers: '[]' },
        { hostname: 'c-periodic-other', drivers: '[]' },
      ])
      .returning('id');
    const [conductorId, otherConductorId] = inserted.map((row: { id: number }) => row.id) as [number, number];
    const group = 'periodic-q';
    const make = async (changes: NodeChanges) => {
      const node = await nodes.create(newNode({ conductorGroup: group }));
      await nodes.update(node.id, changes);
      return node.uuid;
    };
    const active = await make({ provisionState: 'active', powerState: 'power on' });
    const waiting = await make({ provisionState: 'wait call-back' });
    const locked = await make({ provisionState: 'active', reservation: 'c-periodic' });
    const changingPower = await make({ provisionState: 'active', targetPowerState: 'power off' });
    const failedPower = await make({ provisionState: 'active', maintenance: true, fault: 'power failure' });
    const otherMaintenance = await make({ provisionState: 'active', maintenance: true, fault: 'clean failure' });
    const preparedHere = await make({ provisionState: 'active', conductorAffinity: conductorId });
    const preparedElsewhere = await make({ provisionState: 'deploying', conductorAffinity: otherConductorId });
    const uuids = async (filter: PeriodicNodeFilter) =>
      (await nodes.listForPeriodicTask(group, ['fake-hardware'], filter)).map((n) => n.uuid).sort();

    expect(
      await uuids({
        maintenance: false,
        unreserved: true,
        noTargetPowerState: true,
        provisionStateNotIn: ['wait call-back', 'enroll'],
      }),
    ).toEqual([active, preparedElsewhere, preparedHere].sort());
    expect(await uuids({ maintenance: true, fault: 'power failure', unreserved: true })).toEqual([failedPower]);
    expect(await uuids({ maintenance: false, preparedByOtherThan: conductorId })).toEqual([preparedElsewhere]);
    expect(await uuids({})).toEqual(
      [active, waiting, locked, changingPower, failedPower, otherMaintenance, preparedHere, preparedElsewhere].sort(),
    );
  });

  it('lists the nodes that stayed in a state longer than its own limit, counted as the wait timeouts count', async () => {
    const group = 'overdue-q';
    const now = new Date();
    const minutesAgo = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
    const make = async (changes: NodeChanges) => {
      const node = await nodes.create(newNode({ conductorGroup: group }));
      await nodes.update(node.id, changes);
      return node.uuid;
    };
    const lateDeploy = await make({ provisionState: 'wait call-back', provisionUpdatedAt: minutesAgo(31) });
    const freshDeploy = await make({ provisionState: 'wait call-back', provisionUpdatedAt: minutesAgo(29) });
    const lateClean = await make({ provisionState: 'clean wait', provisionUpdatedAt: minutesAgo(11) });
    const freshClean = await make({ provisionState: 'clean wait', provisionUpdatedAt: minutesAgo(9) });
    const lateInMaintenance = await make({
      provisionState: 'wait call-back',
      provisionUpdatedAt: minutesAgo(60),
      maintenance: true,
    });
    const lateButUntimed = await make({ provisionState: 'inspect wait', provisionUpdatedAt: minutesAgo(600) });
    const lateElsewhere = await make({ provisionState: 'active', provisionUpdatedAt: minutesAgo(600) });
    // Never stamped: counted from updated_at.
    const unstampedLate = await make({ provisionState: 'wait call-back', provisionUpdatedAt: null });
    await t
      .db('nodes')
      .where({ uuid: unstampedLate })
      .update({ updated_at: minutesAgo(31) });
    await make({ provisionState: 'wait call-back', provisionUpdatedAt: null }); // updated just now: never listed
    const overdue = async (seconds: Record<string, number>, maintenance?: boolean) =>
      (
        await nodes.listForPeriodicTask(group, ['fake-hardware'], {
          ...(maintenance === undefined ? {} : { maintenance }),
          inStateLongerThan: { seconds, now },
        })
      )
        .map((n) => n.uuid)
        .sort();

    expect(await overdue({ 'wait call-back': 1800, 'clean wait': 600 }, false)).toEqual(
      [lateDeploy, lateClean, unstampedLate].sort(),
    );
    expect(await overdue({ 'wait call-back': 1800, 'clean wait': 600 })).toEqual(
      [lateDeploy, lateClean, lateInMaintenance, unstampedLate].sort(),
    );
    expect(await overdue({ 'wait call-back': 1739 }, false)).toEqual([lateDeploy, freshDeploy, unstampedLate].sort());
    expect(await overdue({ 'wait call-back': 3600 }, false)).toEqual([]);
    expect(await overdue({}, false)).toEqual([]);
    expect(await overdue({ 'clean wait': 539, 'inspect wait': 35_999, active: 36_001 }, false)).toEqual(
      [lateClean, freshClean, lateButUntimed].sort(),
    );
    expect(await overdue({ active: 35_999 })).toEqual([lateElsewhere]);
  });

  it('reads, among given nodes, those a conductor prepared that are in given states, with their ports', async () => {
    const conductor = await t.db('conductors').insert({ hostname: 'c-prepared', drivers: '[]' }).returning('id');
    const conductorId = (conductor[0] as { id: number }).id;
    const mine = await nodes.create(newNode());
    const other = await nodes.create(newNode());
    const notWaiting = await nodes.create(newNode());
    await nodes.update(mine.id, { conductorAffinity: conductorId, provisionState: 'wait call-back' });
    await nodes.update(other.id, { provisionState: 'wait call-back' });
    await nodes.update(notWaiting.id, { conductorAffinity: conductorId, provisionState: 'active' });
    await new PortStore(t.db).create({ uuid: randomUUID(), address: '52:54:00:cc:00:01', nodeId: mine.id });
    const reads = await nodes.listPreparedByWithPorts([mine.id, other.id, notWaiting.id], conductorId, [
      'wait call-back',
      'clean wait',
    ]);
    expect(reads.map((r) => r.node.uuid)).toEqual([mine.uuid]);
    expect(reads[0]?.node).toEqual(await nodes.getById(mine.id));
    expect(reads[0]?.ports.map((p) => p.address)).toEqual(['52:54:00:cc:00:01']);
  });

  it('deletes', async () => {
    const node = await nodes.create(newNode());
    expect(await nodes.destroy(node.id)).toBe(true);
    expect(await nodes.destroy(node.id)).toBe(false);
    expect(await nodes.getById(node.id)).toBeUndefined();
  });
});
