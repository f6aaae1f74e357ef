import { randomUUID } from 'node:crypto';
import { MACAlreadyExists, NodeNotFound, PortAlreadyExists } from '@bmaas/common';
import { createNodePortTestStores, type NodePortTestStores, newNode } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('PortStore', () => {
  let s: NodePortTestStores;
  beforeAll(async () => {
    s = await createNodePortTestStores();
  });
  afterAll(() => s.t.drop());

  it('creates ports carrying their node uuid, unique by MAC and uuid', async () => {
    const node = await s.nodes.create(newNode());
    const port = await s.ports.create({ uuid: randomUUID(), address: '52:54:00:00:00:01', nodeId: node.id });
    expect(port).toMatchObject({ address: '52:54:00:00:00:01', nodeUuid: node.uuid, pxeEnabled: true, extra: {} });
    await expect(
      s.ports.create({ uuid: randomUUID(), address: '52:54:00:00:00:01', nodeId: node.id }),
    ).rejects.toBeInstanceOf(MACAlreadyExists);
    await expect(
      s.ports.create({ uuid: port.uuid, address: '52:54:00:00:00:02', nodeId: node.id }),
    ).rejects.toBeInstanceOf(PortAlreadyExists);
    await expect(
      s.ports.create({ uuid: randomUUID(), address: '52:54:00:00:00:03', nodeId: 999999 }),
    ).rejects.toBeInstanceOf(NodeNotFound);
    expect(await s.ports.getByAddress('52:54:00:00:00:01')).toEqual(port);
    expect(await s.ports.getByUuid(port.uuid)).toEqual(port);
  });

  it('lists, updates, and goes away with its node', async () => {
    const node = await s.nodes.create(newNode());
    const a = await s.ports.create({ uuid: randomUUID(), address: '52:54:00:00:01:01', nodeId: node.id });
    const b = await s.ports.create({
      uuid: randomUUID(),
      address: '52:54:00:00:01:02',
      nodeId: node.id,
      pxeEnabled: false,
    });
    expect((await s.ports.listByNode(node.id)).map((p) => p.uuid)).toEqual([a.uuid, b.uuid]);
    const page = await s.ports.list({ nodeId: node.id, limit: 1, sortKey: 'address', sortDir: 'asc' });
    expect(page.map((p) => p.uuid)).toEqual([a.uuid]);
    const next = await s.ports.list({ nodeId: node.id, limit: 1, marker: a.uuid, sortKey: 'address', sortDir: 'asc' });
    expect(next.map((p) => p.uuid)).toEqual([b.uuid]);
    expect((await s.ports.update(b.id, { extra: { rack: 3 } }))?.extra).toEqual({ rack: 3 });
    await expect(s.ports.update(b.id, { address: a.address })).rejects.toBeInstanceOf(MACAlreadyExists);
    await s.nodes.destroy(node.id);
    expect(await s.ports.getById(a.id)).toBeUndefined();
  });

  it('answers the boot lookup with the node facts, or nothing', async () => {
    const node = await s.nodes.create(newNode({ conductorGroup: 'rack-a' }));
    await s.ports.create({ uuid: randomUUID(), address: '52:54:00:00:02:01', nodeId: node.id });
    expect(await s.ports.bootLookup('52:54:00:00:02:01')).toEqual({
      nodeId: node.id,
      nodeUuid: node.uuid,
      provisionState: 'enroll',
      driver: 'fake-hardware',
      conductorGroup: 'rack-a',
    });
    expect(await s.ports.bootLookup('52:54:00:00:02:02')).toBeUndefined();
  });
});
