import { randomUUID } from 'node:crypto';
import { DuplicateName, MACAlreadyExists, NodeAlreadyExists, PortAlreadyExists } from '@bmaas/common';
import { createNodePortTestStores, type NodePortTestStores, newNode } from '@bmaas/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const mac = (index: number) =>
  `52:54:02:${((index >> 16) & 255).toString(16).padStart(2, '0')}:${((index >> 8) & 255).toString(16).padStart(2, '0')}:${(index & 255).toString(16).padStart(2, '0')}`;

describe('NodeStore.createMany, PortStore.createMany, NodeStore.createManyWithPorts', () => {
  let s: NodePortTestStores;
  beforeAll(async () => {
    s = await createNodePortTestStores();
  });
  afterAll(() => s.t.drop());
  beforeEach(async () => {
    await s.t.db('nodes').delete();
  });
  const count = async (table: string) => Number((await s.t.db(table).count({ n: '*' }))[0]?.n);

  it('stores what create stores, in the order given, columns left out taking their defaults', async () => {
    const one = await s.nodes.create(newNode({ name: 'single', extra: { a: 1 } }));
    const [many, other] = await s.nodes.createMany([
      newNode({ name: 'many', extra: { a: 1 } }),
      newNode({ description: 'only this one has a description' }),
    ]);
    const varying = ['id', 'uuid', 'name', 'createdAt'];
    const strip = (record: object) => Object.fromEntries(Object.entries(record).filter(([k]) => !varying.includes(k)));
    expect(strip(many as object)).toEqual(strip(one));
    expect(await s.nodes.getByUuid((many as { uuid: string }).uuid)).toEqual(many);
    expect(other).toMatchObject({ name: null, maintenance: false, provisionState: 'enroll', extra: {} });
    const [port] = await s.ports.createMany([{ uuid: randomUUID(), address: mac(1), nodeId: one.id, extra: { s: 1 } }]);
    expect(port).toEqual(await s.ports.getByAddress(mac(1)));
    expect(port).toMatchObject({ nodeUuid: one.uuid, pxeEnabled: true, extra: { s: 1 } });
  });

  it('goes past the 65,535 parameters of one statement, all in one transaction', async () => {
    // 4 columns a port: 16,383 ports per statement, so two statements.
    const items = Array.from({ length: 6_000 }, (_, i) => ({
      node: newNode(),
      ports: [0, 1, 2].map((p) => ({ uuid: randomUUID(), address: mac(i * 3 + p), pxeEnabled: p === 0 })),
    }));
    const created = await s.nodes.createManyWithPorts(items);
    expect(created.map((c) => c.node.uuid)).toEqual(items.map((i) => i.node.uuid));
    expect(created[5_999]?.ports.map((p) => p.address)).toEqual([mac(17_997), mac(17_998), mac(17_999)]);
    expect(created[5_999]?.ports.every((p) => p.nodeUuid === created[5_999]?.node.uuid)).toBe(true);
    expect([await count('nodes'), await count('ports')]).toEqual([6_000, 18_000]);

    // The last port conflicts with the first: its statement is the second, and the first goes back too.
    await s.t.db('nodes').delete();
    const last = items[5_999]?.ports[2] as { address: string };
    last.address = mac(0);
    for (const item of items) item.node.uuid = randomUUID();
    const error = await s.nodes.createManyWithPorts(items).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MACAlreadyExists);
    expect((error as MACAlreadyExists).details).toMatchObject({ mac: mac(0), node: 5_999, port: 2 });
    expect([await count('nodes'), await count('ports')]).toEqual([0, 0]);
  });

  it('names the row of a conflict: in the list (the second holder) or with a stored row', async () => {
    const stored = await s.nodes.create(newNode({ name: 'taken' }));
    await s.ports.create({ uuid: randomUUID(), address: mac(9), nodeId: stored.id });
    const item = (name: string | null, address: string) => ({
      node: newNode({ name }),
      ports: [{ uuid: randomUUID(), address }],
    });
    const cases: Array<[Array<ReturnType<typeof item>>, unknown, Record<string, unknown>]> = [
      [[item('a', mac(1)), item('b', mac(2)), item('a', mac(3))], DuplicateName, { node: 2, name: 'a' }],
      [[item('a', mac(1)), item('taken', mac(2))], DuplicateName, { node: 1 }],
      [[item('a', mac(1)), item('b', mac(1))], MACAlreadyExists, { node: 1, port: 0 }],
      [[item('a', mac(1)), item('b', mac(9))], MACAlreadyExists, { node: 1, port: 0 }],
    ];
    for (const [items, kind, details] of cases) {
      const error = await s.nodes.createManyWithPorts(items).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(kind);
      expect((error as { details: object }).details).toMatchObject(details);
    }
    const sameUuid = item(null, mac(4));
    const error = await s.nodes
      .createManyWithPorts([sameUuid, { ...item(null, mac(5)), node: { ...sameUuid.node } }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeAlreadyExists);
    expect((error as NodeAlreadyExists).details).toMatchObject({ node: 1 });
    const portUuid = randomUUID();
    const twice = [
      {
        ...item(null, mac(6)),
        ports: [
          { uuid: portUuid, address: mac(6) },
          { uuid: portUuid, address: mac(7) },
        ],
      },
    ];
    const portError = await s.nodes.createManyWithPorts(twice).catch((e: unknown) => e);
    expect(portError).toBeInstanceOf(PortAlreadyExists);
    expect((portError as PortAlreadyExists).details).toMatchObject({ node: 0, port: 1 });
    expect([await count('nodes'), await count('ports')]).toEqual([1, 1]);
  });
});
