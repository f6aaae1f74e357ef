import { randomUUID } from 'node:crypto';
import { createNodePortTestStores, type NodePortTestStores, newNode } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryPrepared } from './prepared-query.js';

describe('prepared statements on the boot path', () => {
  let s: NodePortTestStores;
  beforeAll(async () => {
    s = await createNodePortTestStores();
  });
  afterAll(() => s.t.drop());

  it('read the same records as the query builder', async () => {
    const node = await s.nodes.create(newNode());
    await s.ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:02', nodeId: node.id });
    await s.ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:01', nodeId: node.id });
    expect(await s.nodes.getByUuid(node.uuid)).toEqual(await s.nodes.getById(node.id));
    expect(await s.nodes.getByUuid(randomUUID())).toBeUndefined();
    const listed = await s.ports.listByNode(node.id);
    expect(listed.map((p) => p.address)).toEqual(['52:54:00:0f:00:02', '52:54:00:0f:00:01']);
    expect(listed[0]).toEqual(await s.ports.getByAddress('52:54:00:0f:00:02'));
    expect(await s.ports.bootLookup('52:54:00:0f:00:01')).toMatchObject({ nodeId: node.id, nodeUuid: node.uuid });
    await s.ports.update(listed[0]!.id, { extra: { rack: 'r1' }, localLinkConnection: { port_id: 'eth1' } });
    expect(await s.nodes.getByUuidWithPorts(node.uuid)).toEqual({
      node: await s.nodes.getById(node.id),
      ports: await s.ports.listByNode(node.id),
    });
    expect(await s.ports.bootLookupMany(['52:54:00:0f:00:09', '52:54:00:0f:00:01', '52:54:00:0f:00:02'])).toEqual([
      undefined,
      await s.ports.bootLookup('52:54:00:0f:00:01'),
      await s.ports.bootLookup('52:54:00:0f:00:02'),
    ]);
    expect(await s.ports.bootLookupMany(['52:54:00:0f:00:01'])).toEqual([
      await s.ports.bootLookup('52:54:00:0f:00:01'),
    ]);
    const bare = await s.nodes.create(newNode());
    expect(await s.nodes.getByUuidWithPorts(bare.uuid)).toEqual({ node: bare, ports: [] });
    expect(await s.nodes.getByUuidWithPorts(randomUUID())).toBeUndefined();
    const missing = randomUUID();
    expect(await s.nodes.getManyByUuidWithPorts([bare.uuid, missing, 'not-a-uuid', node.uuid.toUpperCase()])).toEqual([
      { node: bare, ports: [] },
      undefined,
      undefined,
      await s.nodes.getByUuidWithPorts(node.uuid),
    ]);
    expect(await s.nodes.getManyByUuidWithPorts(['not-a-uuid'])).toEqual([undefined]);
  });

  it('keep answering when a migration adds a column under a prepared select *', async () => {
    const node = await s.nodes.create(newNode());
    // Prepare the statement on every pooled connection the store may use.
    await Promise.all(Array.from({ length: 4 }, () => s.nodes.getByUuid(node.uuid)));
    await s.t.db.raw('alter table nodes add column added_later text');
    try {
      const rows = await Promise.all(Array.from({ length: 4 }, () => s.nodes.getByUuid(node.uuid)));
      for (const row of rows) expect(row?.uuid).toBe(node.uuid);
    } finally {
      await s.t.db.raw('alter table nodes drop column added_later');
    }
  });

  it('passes other errors on', async () => {
    await expect(
      queryPrepared(s.t.db, 'bmaas_test_broken', 'select * from no_such_table where id = $1', [1]),
    ).rejects.toThrow(/no_such_table/);
  });

  it('create nodes and ports through prepared inserts, as the query builder did', async () => {
    const created = await s.nodes.create(newNode({ name: 'prepared-insert', extra: { a: [1, 2] } }));
    expect(created).toEqual(await s.nodes.getById(created.id));
    expect(created.extra).toEqual({ a: [1, 2] });
    const port = await s.ports.create({
      uuid: randomUUID(),
      address: '52:54:00:0f:00:31',
      nodeId: created.id,
      localLinkConnection: { switch_id: 'aa:bb:cc:dd:ee:ff' },
    });
    expect(port).toEqual(await s.ports.getByUuid(port.uuid));
    expect(port.nodeUuid).toBe(created.uuid);
    // The statement is prepared once per connection; its errors still become the stores' own.
    await expect(s.nodes.create(newNode({ name: 'prepared-insert' }))).rejects.toThrow(/prepared-insert/);
    await expect(
      s.ports.create({ uuid: randomUUID(), address: '52:54:00:0f:00:31', nodeId: created.id }),
    ).rejects.toThrow(/52:54:00:0f:00:31/);
  });
});
