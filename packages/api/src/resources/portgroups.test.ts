import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

describe('/v1/portgroups and the port fields that go with them', () => {
  let api: ApiHarness;
  let nodeA: string;
  let nodeB: string;
  beforeAll(async () => {
    // A mode other than the default one: portgroups created without a mode get [DEFAULT]default_portgroup_mode.
    api = await ApiHarness.start({ overrides: { DEFAULT: { default_portgroup_mode: 'balance-alb' } } });
    await api.registerConductor('cond-1');
    nodeA = await api.createNode({ name: 'pg-a' });
    nodeB = await api.createNode({ name: 'pg-b' });
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('ports').delete();
    await api.database.db('portgroups').delete();
  });
  const createPortgroup = (body: Record<string, unknown>, version?: string) =>
    api.request('POST', '/v1/portgroups', { body, version });

  it('creates, shows by uuid and name, lists, patches and deletes a portgroup', async () => {
    const created = await createPortgroup({ node_uuid: nodeA, name: 'bond0', address: '52-54-00-AA-00-01' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'bond0',
      address: '52:54:00:aa:00:01',
      node_uuid: nodeA,
      mode: 'balance-alb',
      properties: {},
      standalone_ports_supported: true,
      internal_info: {},
      extra: {},
    });
    const uuid = created.body.uuid;
    expect((await api.request('GET', '/v1/portgroups/bond0')).body.uuid).toBe(uuid);
    const list = await api.request('GET', `/v1/portgroups?node=pg-a`);
    expect(list.body.portgroups).toEqual([
      { uuid, address: '52:54:00:aa:00:01', name: 'bond0', links: expect.any(Array) },
    ]);
    expect((await api.request('GET', `/v1/portgroups?node=${nodeB}`)).body.portgroups).toEqual([]);
    expect((await api.request('GET', '/v1/portgroups?address=52:54:00:aa:00:01')).body.portgroups).toHaveLength(1);
    const ofNode = await api.request('GET', '/v1/nodes/pg-a/portgroups');
    expect(ofNode.body.portgroups.map((p: { uuid: string }) => p.uuid)).toEqual([uuid]);
    expect((await api.request('GET', `/v1/nodes/${nodeB}/portgroups/detail`)).body.portgroups).toEqual([]);
    expect((await api.request('GET', '/v1/nodes/pg-a/portgroups', { version: '1.23' })).status).toBe(404);

    const patched = await api.request('PATCH', '/v1/portgroups/bond0', {
      body: [
        { op: 'replace', path: '/mode', value: '802.3ad' },
        { op: 'replace', path: '/standalone_ports_supported', value: 'false' },
        { op: 'add', path: '/properties/miimon', value: '100' },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      mode: '802.3ad',
      standalone_ports_supported: false,
      properties: { miimon: '100' },
    });
    expect((await api.request('DELETE', '/v1/portgroups/bond0')).status).toBe(204);
    expect((await api.request('GET', `/v1/portgroups/${uuid}`)).status).toBe(404);
  });

  it('attaches ports: portgroup_uuid, /portgroups/{id}/ports, ?portgroup=, no delete while ports remain', async () => {
    const pg = (await createPortgroup({ node_uuid: nodeA, name: 'bond1' })).body.uuid;
    const port = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:bb:00:01', node_uuid: nodeA, portgroup_uuid: pg },
    });
    expect(port.status).toBe(201);
    expect(port.body.portgroup_uuid).toBe(pg);
    await api.request('POST', '/v1/ports', { body: { address: '52:54:00:bb:00:02', node_uuid: nodeA } });

    const members = await api.request('GET', `/v1/portgroups/${pg}/ports`);
    expect(members.status).toBe(200);
    expect(members.body.ports.map((p: { address: string }) => p.address)).toEqual(['52:54:00:bb:00:01']);
    const byFilter = await api.request('GET', '/v1/ports/detail?portgroup=bond1');
    expect(byFilter.body.ports.map((p: { portgroup_uuid: string }) => p.portgroup_uuid)).toEqual([pg]);

    const refused = await api.request('DELETE', `/v1/portgroups/${pg}`);
    expect(refused.status).toBe(400);
    expect(faultString(refused)).toBe(`Cannot complete the requested action because portgroup ${pg} contains ports.`);

    const otherNode = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:bb:00:03', node_uuid: nodeB, portgroup_uuid: pg },
    });
    expect(otherNode.status).toBe(400);
    expect(faultString(otherNode)).toBe('Port can not be added to a portgroup on a different node.');

    const standalone = await api.request('POST', '/v1/portgroups', {
      body: { node_uuid: nodeA, name: 'no-standalone', standalone_ports_supported: false },
    });
    const pxeMember = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:bb:00:04', node_uuid: nodeA, portgroup_uuid: standalone.body.uuid, pxe_enabled: true },
    });
    expect(pxeMember.status).toBe(409);
    expect(faultString(pxeMember)).toContain("doesn't support standalone ports");

    const detached = await api.request('PATCH', `/v1/ports/${port.body.uuid}`, {
      body: [{ op: 'remove', path: '/portgroup_uuid' }],
    });
    expect(detached.body.portgroup_uuid).toBeNull();
    expect((await api.request('DELETE', `/v1/portgroups/${pg}`)).status).toBe(204);
  });

  it('ports: names (1.88), is_smartnic (1.53), physical_network', async () => {
    const named = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:cc:00:01', node_uuid: nodeA, name: 'eth0', physical_network: 'physnet1' },
      version: '1.88',
    });
    expect(named.status).toBe(201);
    expect(named.body).toMatchObject({ name: 'eth0', physical_network: 'physnet1', is_smartnic: false });
    expect((await api.request('GET', '/v1/ports/eth0', { version: '1.88' })).body.uuid).toBe(named.body.uuid);
    expect((await api.request('GET', `/v1/ports/${named.body.uuid}`)).body).not.toHaveProperty('name');
    const tooOld = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:cc:00:02', node_uuid: nodeA, name: 'eth1' },
      version: '1.87',
    });
    expect(tooOld.status).toBe(406);
    const duplicate = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:cc:00:03', node_uuid: nodeA, name: 'eth0' },
      version: '1.88',
    });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toBe('A port with name eth0 already exists.');

    const smartnic = await api.request('POST', '/v1/ports', {
      body: {
        address: '52:54:00:cc:00:04',
        node_uuid: nodeA,
        is_smartnic: true,
        local_link_connection: { port_id: 'rep0-0', hostname: 'host-a' },
      },
    });
    expect(smartnic.status).toBe(201);
    expect(smartnic.body.is_smartnic).toBe(true);
    const incomplete = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:cc:00:05', node_uuid: nodeA, is_smartnic: true },
    });
    expect(incomplete.status).toBe(400);
    expect((await api.request('GET', `/v1/ports/${smartnic.body.uuid}`, { version: '1.52' })).body).not.toHaveProperty(
      'is_smartnic',
    );
  });

  it('go with their node, ports and all, when the node is deleted', async () => {
    const node = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'pg-doomed' } })).body
      .uuid;
    const pg = (await createPortgroup({ node_uuid: node, name: 'doomed-bond' })).body.uuid;
    await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:ee:00:01', node_uuid: node, portgroup_uuid: pg },
    });
    expect((await api.request('DELETE', `/v1/nodes/${node}`)).status).toBe(204);
    expect((await api.request('GET', `/v1/portgroups/${pg}`)).status).toBe(404);
    expect((await api.request('GET', '/v1/ports?address=52:54:00:ee:00:01')).body.ports).toEqual([]);
  });

  it('refuses bad input', async () => {
    const badMac = await createPortgroup({ node_uuid: nodeA, address: 'zz' });
    expect(badMac.status).toBe(400);
    const noNode = await createPortgroup({ name: 'x' });
    expect(faultString(noNode)).toBe("Schema error for portgroup: 'node_uuid' is a required property");
    const unknownNode = crypto.randomUUID();
    expect(faultString(await createPortgroup({ node_uuid: unknownNode }))).toBe(
      `Node ${unknownNode} could not be found.`,
    );
    const badName = await createPortgroup({ node_uuid: nodeA, name: 'a b' });
    expect(faultString(badName)).toBe('Expected name for name: a b');
    await createPortgroup({ node_uuid: nodeA, name: 'dup', address: '52:54:00:dd:00:01' });
    const dupName = await createPortgroup({ node_uuid: nodeA, name: 'dup' });
    expect(dupName.status).toBe(409);
    expect(faultString(dupName)).toBe('A portgroup with name dup already exists.');
    const dupMac = await createPortgroup({ node_uuid: nodeB, address: '52:54:00:dd:00:01' });
    expect(faultString(dupMac)).toBe('A portgroup with MAC address 52:54:00:dd:00:01 already exists.');
    expect((await api.request('GET', '/v1/portgroups?sort_key=properties')).status).toBe(400);
    expect((await api.request('GET', '/v1/portgroups?owner=x')).status).toBe(400);
  });

  it('is gated by microversion as Ironic: 404 below 1.23, mode below 1.26, ports below 1.24', async () => {
    const pg = (await createPortgroup({ node_uuid: nodeA, name: 'gated', mode: 'balance-rr' })).body.uuid;
    expect((await api.request('GET', '/v1/portgroups', { version: '1.22' })).status).toBe(404);
    expect((await api.request('POST', '/v1/portgroups', { body: { node_uuid: nodeA }, version: '1.22' })).status).toBe(
      404,
    );
    const old = await api.request('GET', `/v1/portgroups/${pg}`, { version: '1.23' });
    expect(old.status).toBe(200);
    expect(old.body).not.toHaveProperty('mode');
    expect(old.body).not.toHaveProperty('ports');
    expect((await createPortgroup({ node_uuid: nodeA, mode: '802.3ad' }, '1.25')).status).toBe(406);
    expect((await api.request('GET', `/v1/portgroups/${pg}/ports`, { version: '1.23' })).status).toBe(404);
    expect((await api.request('GET', `/v1/portgroups?fields=mode`, { version: '1.25' })).status).toBe(406);
  });
});
