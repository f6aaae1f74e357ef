import { randomUUID } from 'node:crypto';
import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeStore } from './node-store.js';
import { PortStore } from './port-store.js';
import { queryPrepared } from './prepared-query.js';

describe('prepared statements on the boot path', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  let ports: PortStore;
  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
    ports = new PortStore(t.db);
  });
  afterAll(() => t.drop());

  it('read the same records as the query builder', async () => {
    const node = await nodes.create(newNode());
    await ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:02', nodeId: node.id });
    await ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:01', nodeId: node.id });
    expect(await nodes.getByUuid(node.uuid)).toEqual(await nodes.getById(node.id));
    expect(await nodes.getByUuid(randomUUID())).toBeUndefined();
    const listed = await ports.listByNode(node.id);
    expect(listed.map((p) => p.address)).toEqual(['52:54:00:0f:00:02', '52:54:00:0f:00:01']);
    expect(listed[0]).toEqual(await ports.getByAddress('52:54:00:0f:00:02'));
    expect(await ports.bootLookup('52:54:00:0f:00:01')).toMatchObject({ nodeId: node.id, nodeUuid: node.uuid });
    await ports.update(listed[0]!.id, { extra: { rack: 'r1' }, localLinkConnection: { port_id: 'eth1' } });
    expect(await nodes.getByUuidWithPorts(node.uuid)).toEqual({
      node: await nodes.getById(node.id),
      ports: await ports.listByNode(node.id),
    });
    expect(await ports.bootLookupMany(['52:54:00:0f:00:09', '52:54:00:0f:00:01', '52:54:00:0f:00:02'])).toEqual([
      undefined,
      await ports.bootLookup('52:54:00:0f:00:01'),
      await ports.bootLookup('52:54:00:0f:00:02'),
    ]);
    expect(await ports.bootLookupMany(['52:54:00:0f:00:01'])).toEqual([await ports.bootLookup('52:54:00:0f:00:01')]);
    const bare = await nodes.create(newNode());
    expect(await nodes.getByUuidWithPorts(bare.uuid)).toEqual({ node: bare, ports: [] });
    expect(await nodes.getByUuidWithPorts(randomUUID())).toBeUndefined();
    const missing = randomUUID();
    expect(await nodes.getManyByUuidWithPorts([bare.uuid, missing, 'not-a-uuid', node.uuid.toUpperCase()])).toEqual([
      { node: bare, ports: [] },
      undefined,
      undefined,
      await nodes.getByUuidWithPorts(node.uuid),
    ]);
    expect(await nodes.getManyByUuidWithPorts(['not-a-uuid'])).toEqual([undefined]);
  });

  it('keep answering when a migration adds a column under a prepared select *', async () => {
    const node = await nodes.create(newNode());
    // Prepare the statement on every pooled connection the store may use.
    await Promise.all(Array.from({ length: 4 }, () => nodes.getByUuid(node.uuid)));
    await t.db.raw('alter table nodes add column added_later text');
    try {
      const rows = await Promise.all(Array.from({ length: 4 }, () => nodes.getByUuid(node.uuid)));
      for (const row of rows) expect(row?.uuid).toBe(node.uuid);
    } finally {
      await t.db.raw('alter table nodes drop column added_later');
    }
  });

  it('passes other errors on', async () => {
    await expect(
      queryPrepared(t.db, 'bmaas_test_broken', 'select * from no_such_table where id = $1', [1]),
    ).rejects.toThrow(/no_such_table/);
  });

  it('create nodes and ports through prepared inserts, as the query builder did', async () => {
    const created = await nodes.create(newNode({ name: 'prepared-insert', extra: { a: [1, 2] } }));
    expect(created).toEqual(await nodes.getById(created.id));
    expect(created.extra).toEqual({ a: [1, 2] });
    const port = await ports.create({
      uuid: randomUUID(),
      address: '52:54:00:0f:00:31',
      nodeId: created.id,
      localLinkConnection: { switch_id: 'aa:bb:cc:dd:ee:ff' },
    });
    expect(port).toEqual(await ports.getByUuid(port.uuid));
    expect(port.nodeUuid).toBe(created.uuid);
    // The statement is prepared once per connection; its errors still become the stores' own.
    await expect(nodes.create(newNode({ name: 'prepared-insert' }))).rejects.toThrow(/prepared-insert/);
    await expect(
      ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:31', nodeId: created.id }),
    ).rejects.toThrow(/52:54:00:0f:00:31/);
  });
});
