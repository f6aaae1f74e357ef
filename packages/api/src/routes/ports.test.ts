import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

const IRONIC_PORT_KEYS = [
  'uuid',
  'created_at',
  'updated_at',
  'address',
  'extra',
  'internal_info',
  'is_smartnic',
  'local_link_connection',
  'physical_network',
  'pxe_enabled',
  'node_uuid',
  'links',
  'portgroup_uuid',
];

describe('/v1/ports', () => {
  let api: ApiHarness;
  let nodeA: string;
  let nodeB: string;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { max_limit: 2 } } });
    await api.registerConductor('cond-1');
    nodeA = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'node-a' } })).body.uuid;
    nodeB = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'node-b' } })).body.uuid;
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('ports').delete();
  });

  const create = (body: Record<string, unknown>) => api.request('POST', '/v1/ports', { body });

  it('creates a port from any MAC form it accepts, stored canonical, with every Ironic field', async () => {
    const res = await create({ address: '52-54-00-AA-BB-01', node_uuid: nodeA, extra: { slot: 1 } });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`${api.baseUrl}/v1/ports/${res.body.uuid}`);
    expect(Object.keys(res.body).sort()).toEqual([...IRONIC_PORT_KEYS].sort());
    expect(res.body).toMatchObject({
      address: '52:54:00:aa:bb:01',
      node_uuid: nodeA,
      pxe_enabled: true,
      physical_network: null,
      local_link_connection: {},
      internal_info: {},
      is_smartnic: false,
      portgroup_uuid: null,
      extra: { slot: 1 },
    });
    for (const address of ['525400aabb02', '52%3A54%3A00%3Aaa%3Abb%3A03']) {
      expect((await create({ address, node_uuid: nodeA })).status, address).toBe(201);
    }
    const withNetwork = await create({
      address: '52:54:00:aa:bb:04',
      node_uuid: nodeB,
      pxe_enabled: false,
      physical_network: 'physnet1',
      local_link_connection: { switch_id: '0a:1b:2c:3d:4e:5f', port_id: 'Eth1/1', switch_info: 'sw1' },
    });
    expect(withNetwork.body).toMatchObject({ pxe_enabled: false, physical_network: 'physnet1' });
  });

  it.each([
    [{ address: 'not-a-mac', node_uuid: 'NODE_A' }, 'Expected a MAC address'],
    [{ address: '52:54:00:aa:bb', node_uuid: 'NODE_A' }, 'Expected a MAC address'],
    [{ address: '52:54:00:aa:bb:01' }, "'node_uuid' is a required property"],
    [{ address: '52:54:00:aa:bb:01', node_uuid: 'NODE_A', owner: 'p' }, "('owner' was unexpected)"],
    [{ address: '52:54:00:aa:bb:01', node_uuid: 'NODE_A', physical_network: '' }, 'non-empty'],
    [{ address: '52:54:00:aa:bb:01', node_uuid: 'NODE_A', local_link_connection: { cable: 1 } }, 'cable'],
    [{ address: '52:54:00:aa:bb:01', node_uuid: '11111111-2222-4333-8444-555555555555' }, 'could not be found'],
    [{ address: '52:54:00:aa:bb:01', node_uuid: 'node-a' }, 'node_uuid'],
  ] as Array<[Record<string, unknown>, string]>)('refuses %j with 400', async (body, message) => {
    const res = await create({ ...body, ...(body.node_uuid === 'NODE_A' ? { node_uuid: nodeA } : {}) });
    expect(res.status).toBe(400);
    expect(faultString(res)).toContain(message);
  });

  it('refuses a MAC that any port already has with 409 MACAlreadyExists', async () => {
    expect((await create({ address: '52:54:00:aa:bb:01', node_uuid: nodeA })).status).toBe(201);
    const duplicate = await create({ address: '52:54:00:AA:BB:01', node_uuid: nodeB });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toContain('52:54:00:aa:bb:01');
  });

  it('refuses fields newer than the request version with 406', async () => {
    const res = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:aa:bb:09', node_uuid: nodeA, pxe_enabled: true },
      version: '1.18',
    });
    expect(res.status).toBe(406);
  });

  it('lists by node (uuid or name) and by address in any form, pages, and shows details', async () => {
    const macs = ['52:54:00:00:00:01', '52:54:00:00:00:02', '52:54:00:00:00:03'];
    const uuids: string[] = [];
    for (const [i, address] of macs.entries()) {
      uuids.push((await create({ address, node_uuid: i < 2 ? nodeA : nodeB })).body.uuid);
    }
    const all = await api.request('GET', '/v1/ports');
    expect(all.body.ports).toHaveLength(2);
    expect(Object.keys(all.body.ports[0]).sort()).toEqual(['address', 'links', 'uuid']);
    const next = new URL(all.body.next);
    expect(next.searchParams.get('marker')).toBe(uuids[1]);
    expect((await api.request('GET', `${next.pathname}${next.search}`)).body.ports).toEqual([
      expect.objectContaining({ uuid: uuids[2] }),
    ]);

    const addresses = async (query: string) =>
      (await api.request('GET', `/v1/ports?${query}`)).body.ports.map((p: { address: string }) => p.address);
    expect(await addresses('node=node-b')).toEqual([macs[2]]);
    expect(await addresses(`node_uuid=${nodeB}`)).toEqual([macs[2]]);
    expect(await addresses('address=52-54-00-00-00-02')).toEqual([macs[1]]);
    expect(await addresses('address=525400000009')).toEqual([]);
    expect(await addresses('sort_key=address&sort_dir=desc')).toEqual([macs[2], macs[1]]);
    expect((await api.request('GET', '/v1/ports?address=zz')).status).toBe(400);
    expect((await api.request('GET', '/v1/ports?node=nobody')).status).toBe(404);
    expect((await api.request('GET', '/v1/ports?limit=0')).status).toBe(400);
    expect((await api.request('GET', '/v1/ports?sort_key=extra')).status).toBe(400);
    expect((await api.request('GET', '/v1/ports?marker=11111111-2222-4333-8444-555555555555')).status).toBe(404);
    expect((await api.request('GET', '/v1/ports?fields=uuid,node_uuid')).body.ports[0]).toEqual({
      uuid: uuids[0],
      node_uuid: nodeA,
      links: expect.any(Array),
    });
    expect((await api.request('GET', '/v1/ports?fields=bogus')).status).toBe(400);

    const detail = await api.request('GET', '/v1/ports/detail');
    expect(Object.keys(detail.body.ports[0]).sort()).toEqual([...IRONIC_PORT_KEYS].sort());
    const ofNode = await api.request('GET', '/v1/nodes/node-a/ports');
    expect(ofNode.body.ports.map((p: { uuid: string }) => p.uuid)).toEqual([uuids[0], uuids[1]]);
  });

  it('shows, updates and deletes one port', async () => {
    const port = (await create({ address: '52:54:00:00:01:01', node_uuid: nodeA })).body;
    expect((await api.request('GET', `/v1/ports/${port.uuid}`)).body.address).toBe('52:54:00:00:01:01');
    expect((await api.request('GET', '/v1/ports/11111111-2222-4333-8444-555555555555')).status).toBe(404);
    expect((await api.request('GET', '/v1/ports/not-a-uuid')).status).toBe(400);

    const patched = await api.request('PATCH', `/v1/ports/${port.uuid}`, {
      body: [
        { op: 'replace', path: '/address', value: '52-54-00-00-01-02' },
        { op: 'replace', path: '/node_uuid', value: nodeB },
        { op: 'replace', path: '/pxe_enabled', value: false },
        { op: 'add', path: '/extra/x', value: 'y' },
      ],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      address: '52:54:00:00:01:02',
      node_uuid: nodeB,
      pxe_enabled: false,
      extra: { x: 'y' },
    });
    const other = (await create({ address: '52:54:00:00:01:03', node_uuid: nodeA })).body;
    const clash = await api.request('PATCH', `/v1/ports/${other.uuid}`, {
      body: [{ op: 'replace', path: '/address', value: '52:54:00:00:01:02' }],
    });
    expect(clash.status).toBe(409);
    const badMac = await api.request('PATCH', `/v1/ports/${other.uuid}`, {
      body: [{ op: 'replace', path: '/address', value: 'xx' }],
    });
    expect(badMac.status).toBe(400);
    const badField = await api.request('PATCH', `/v1/ports/${other.uuid}`, {
      body: [{ op: 'replace', path: '/uuid', value: port.uuid }],
    });
    expect(badField.status).toBe(400);

    expect((await api.request('DELETE', `/v1/ports/${port.uuid}`)).status).toBe(204);
    expect((await api.request('GET', `/v1/ports/${port.uuid}`)).status).toBe(404);
    expect((await api.request('DELETE', `/v1/ports/${port.uuid}`)).status).toBe(404);
  });

  it('refuses to change or delete a port while a conductor holds its node', async () => {
    const port = (await create({ address: '52:54:00:00:02:01', node_uuid: nodeA })).body;
    const node = (await api.stores.nodes.getByUuid(nodeA))!;
    await api.stores.nodes.update(node.id, { reservation: 'cond-1' });
    try {
      expect((await api.request('DELETE', `/v1/ports/${port.uuid}`)).status).toBe(409);
    } finally {
      await api.stores.nodes.update(node.id, { reservation: null });
    }
    expect((await api.request('DELETE', `/v1/ports/${port.uuid}`)).status).toBe(204);
  });

  describe('OVN VTEP switch keys in local_link_connection (1.90)', () => {
    const vtep = { port_id: 'p1', 'vtep-logical-switch': 'ls1', 'vtep-physical-switch': 'ps1' };

    it('accepts a VTEP link from 1.90 and shows it as empty to older versions', async () => {
      const res = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:03:01', node_uuid: nodeA, local_link_connection: vtep },
        version: '1.90',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.local_link_connection).toEqual(vtep);
      const at = async (version: string) =>
        (await api.request('GET', `/v1/ports/${res.body.uuid}`, { version })).body.local_link_connection;
      expect(await at('1.90')).toEqual(vtep);
      expect(await at('1.89')).toEqual({});
    });

    it('refuses the VTEP keys below 1.90 with 406, on create and on PATCH', async () => {
      const below = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:03:02', node_uuid: nodeA, local_link_connection: vtep },
        version: '1.89',
      });
      expect(below.status).toBe(406);
      expect(faultString(below)).toContain('1.90');
      const port = (await create({ address: '52:54:00:00:03:03', node_uuid: nodeA })).body;
      const patch = (version: string) =>
        api.request('PATCH', `/v1/ports/${port.uuid}`, {
          body: [{ op: 'replace', path: '/local_link_connection', value: vtep }],
          version,
        });
      expect((await patch('1.89')).status).toBe(406);
      expect((await patch('1.90')).body.local_link_connection).toEqual(vtep);
    });

    it.each([
      [{ port_id: 'p1', 'vtep-logical-switch': 'ls1' }, 'one VTEP key without the other'],
      [{ 'vtep-logical-switch': 'ls1', 'vtep-physical-switch': 'ps1' }, 'VTEP keys without port_id'],
      [{ ...vtep, 'vtep-logical-switch': 7 }, 'a VTEP key that is not a string'],
      [{ switch_id: '0a:1b:2c:3d:4e:5f' }, 'a switch without port_id'],
    ] as Array<[Record<string, unknown>, string]>)('refuses %j (%s) with 400', async (link, _why) => {
      const res = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:03:04', node_uuid: nodeA, local_link_connection: link },
        version: '1.90',
      });
      expect(res.status).toBe(400);
      expect(faultString(res)).toContain('local_link_connection');
    });

    it('refuses network_type below 1.64 with 406', async () => {
      const res = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:03:05', node_uuid: nodeA, local_link_connection: { network_type: 'unmanaged' } },
        version: '1.63',
      });
      expect(res.status).toBe(406);
    });
  });

  describe('the node named by node_ident, UUID or name (1.94)', () => {
    it('creates a port on the node named by node_ident from 1.94', async () => {
      for (const [address, ident] of [
        ['52:54:00:00:04:01', 'node-b'],
        ['52:54:00:00:04:02', nodeB.toUpperCase()],
      ]) {
        const res = await api.request('POST', '/v1/ports', { body: { address, node_ident: ident }, version: '1.94' });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body.node_uuid).toBe(nodeB);
        expect(res.body).not.toHaveProperty('node_ident');
      }
    });

    it('refuses node_ident below 1.94 with 406', async () => {
      const res = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:04:03', node_ident: 'node-b' },
        version: '1.93',
      });
      expect(res.status).toBe(406);
      expect(faultString(res)).toContain('1.94');
    });

    it.each([
      [{ node_ident: 'nobody' }, 'Node nobody could not be found.'],
      [{ node_ident: 'not a name!' }, 'Expected a logical name or UUID but received not a name!'],
      [{ node_ident: 'node-b', node_uuid: 'NODE_B' }, 'Schema error for port'],
      [{ node_uuid: 'node-b' }, 'Expected UUID for node_uuid: node-b'],
    ] as Array<[Record<string, unknown>, string]>)('refuses %j with 400', async (node, message) => {
      const body = {
        address: '52:54:00:00:04:04',
        ...node,
        ...(node.node_uuid === 'NODE_B' ? { node_uuid: nodeB } : {}),
      };
      const res = await api.request('POST', '/v1/ports', { body, version: '1.94' });
      expect(res.status).toBe(400);
      expect(faultString(res)).toContain(message);
    });

    it('does not take node_ident in a PATCH (the node is changed by node_uuid)', async () => {
      const port = (await create({ address: '52:54:00:00:04:05', node_uuid: nodeA })).body;
      const res = await api.request('PATCH', `/v1/ports/${port.uuid}`, {
        body: [{ op: 'add', path: '/node_ident', value: 'node-b' }],
        version: '1.94',
      });
      expect(res.status).toBe(400);
    });
  });
});
