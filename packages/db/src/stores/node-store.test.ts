import { randomUUID } from 'node:crypto';
import { DuplicateName, InvalidParameterValue, NodeAlreadyExists } from '@bmaas/common';
import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeStore } from './node-store.js';
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
    expect(await nodes.idOf('uuid', node.uuid)).toBe(node.id);
    expect(await nodes.idOf('name', 'n-create')).toBe(node.id);
    expect(await nodes.idOf('uuid', randomUUID())).toBeUndefined();
    expect(await nodes.idOf('name', 'n-nobody')).toBeUndefined();
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
