import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, basicAuthorization, faultString } from '../testing/api-harness.js';

/** A node body of every kind of field the bench and operators use, named and with one port. */
function nodeBody(index: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `bulk-${index}`,
    driver: 'fake-hardware',
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    driver_info: { deploy_kernel: 'file:///k', deploy_ramdisk: 'file:///r' },
    instance_info: { image_source: 'http://127.0.0.1:9/i.raw' },
    properties: { cpus: 4 },
    ...extra,
  };
}
const mac = (index: number) =>
  `52:54:00:aa:${String(Math.floor(index / 256)).padStart(2, '0')}:${(index % 256).toString(16).padStart(2, '0')}`;

describe('POST /v1/nodes/bulk', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { bulk_enrolment_max_nodes: 3 } } });
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('nodes').delete();
  });

  const bulk = (nodes: unknown, version?: string) =>
    api.request('POST', '/v1/nodes/bulk', { body: { nodes }, ...(version ? { version } : {}) });
  const counts = async () => ({
    nodes: Number((await api.database.db('nodes').count({ n: '*' }))[0]?.n),
    ports: Number((await api.database.db('ports').count({ n: '*' }))[0]?.n),
  });

  it('creates the nodes with their ports and answers their uuids, names and port addresses', async () => {
    const res = await bulk([
      { ...nodeBody(0), ports: [{ address: '52-54-00-AA-00-00' }, { address: mac(100), pxe_enabled: false }] },
      nodeBody(1),
      { ...nodeBody(2), name: undefined, ports: [{ address: mac(2), extra: { slot: 2 } }] },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.nodes).toHaveLength(3);
    expect(res.body.nodes.map((n: { name: string | null }) => n.name)).toEqual(['bulk-0', 'bulk-1', null]);
    expect(res.body.nodes[0].ports.map((p: { address: string }) => p.address)).toEqual([mac(0), mac(100)]);
    expect(res.body.nodes[1].ports).toEqual([]);
    for (const node of res.body.nodes) {
      const read = await api.request('GET', `/v1/nodes/${node.uuid}`);
      expect(read.body).toMatchObject({ uuid: node.uuid, name: node.name, provision_state: 'enroll' });
      const ports = await api.request('GET', `/v1/nodes/${node.uuid}/ports?fields=uuid,address`);
      expect(ports.body.ports).toEqual(node.ports.map((p: object) => expect.objectContaining(p)));
    }
    expect(await counts()).toEqual({ nodes: 3, ports: 3 });
  });

  it('stores nodes and ports identical to those POST /v1/nodes and POST /v1/ports create from the same input', async () => {
    const extra = {
      description: 'rack 7',
      resource_class: 'baremetal',
      conductor_group: '',
      extra: { asset: 'x' },
    };
    const port = { pxe_enabled: 'false', physical_network: 'physnet1', extra: { slot: 1 } };
    const single = await api.request('POST', '/v1/nodes', { body: nodeBody(0, extra) });
    expect(single.status).toBe(201);
    const singlePort = await api.request('POST', '/v1/ports', {
      body: { ...port, address: mac(0), node_uuid: single.body.uuid },
    });
    expect(singlePort.status).toBe(201);
    const res = await bulk([{ ...nodeBody(1, extra), ports: [{ ...port, address: mac(1) }] }]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const created = res.body.nodes[0];

    const varying = ['uuid', 'name', 'created_at', 'updated_at', 'links', 'ports', 'portgroups', 'states', 'volume'];
    const without = (doc: Record<string, unknown>, keys: string[]) =>
      Object.fromEntries(Object.entries(doc).filter(([key]) => !keys.includes(key)));
    const bulkNode = (await api.request('GET', `/v1/nodes/${created.uuid}`)).body;
    const singleNode = (await api.request('GET', `/v1/nodes/${single.body.uuid}`)).body;
    expect(Object.keys(bulkNode).sort()).toEqual(Object.keys(singleNode).sort());
    expect(without(bulkNode, varying)).toEqual(without(singleNode, varying));
    const portVarying = ['uuid', 'address', 'node_uuid', 'created_at', 'updated_at', 'links'];
    const bulkPort = (await api.request('GET', `/v1/ports/${created.ports[0].uuid}`)).body;
    const singlePortRead = (await api.request('GET', `/v1/ports/${singlePort.body.uuid}`)).body;
    expect(without(bulkPort, portVarying)).toEqual(without(singlePortRead, portVarying));
    expect(bulkPort.node_uuid).toBe(created.uuid);
    expect(bulkPort.pxe_enabled).toBe(false);
  });

  it('refuses an invalid node or port anywhere in the list with the single path error naming it, and creates nothing', async () => {
    const badInterface = { driver: 'fake-hardware', deploy_interface: 'nope' };
    const singleNode = await api.request('POST', '/v1/nodes', { body: badInterface });
    const res = await bulk([nodeBody(0), badInterface, nodeBody(2)]);
    expect(res.status).toBe(singleNode.status);
    expect(faultString(res)).toBe(`nodes[1]: ${faultString(singleNode)}`);

    const owner = await api.request('POST', '/v1/nodes', { body: nodeBody(9) });
    const singlePort = await api.request('POST', '/v1/ports', {
      body: { address: 'not-a-mac', node_uuid: owner.body.uuid },
    });
    await api.request('DELETE', `/v1/nodes/${owner.body.uuid}`);
    const badPort = await bulk([
      { ...nodeBody(0), ports: [{ address: mac(0) }] },
      { ...nodeBody(1), ports: [{ address: mac(1) }, { address: 'not-a-mac' }] },
    ]);
    expect(badPort.status).toBe(400);
    expect(faultString(badPort)).toBe(`nodes[1].ports[1]: ${faultString(singlePort)}`);

    const unknownField = await bulk([nodeBody(0), { ...nodeBody(1), ports: [{ address: mac(1), owner: 'p' }] }]);
    expect(unknownField.status).toBe(400);
    expect(faultString(unknownField)).toMatch(
      /^nodes\[1\]\.ports\[0\]: Schema error for port: .*'owner' was unexpected/,
    );

    const withNode = await bulk([{ ...nodeBody(0), ports: [{ address: mac(0), node_uuid: owner.body.uuid }] }]);
    expect(withNode.status).toBe(400);
    expect(faultString(withNode)).toBe(
      "nodes[0].ports[0]: A port listed under its node takes no node_uuid: it is that node's.",
    );

    const notAList = await bulk([{ ...nodeBody(0), ports: { address: mac(0) } }]);
    expect(notAList.status).toBe(400);
    expect(faultString(notAList)).toBe('nodes[0]: ports must be a list of ports.');
    expect(await counts()).toEqual({ nodes: 0, ports: 0 });
  });

  it('applies the microversion rules of the request to every node and port', async () => {
    const single = await api.request('POST', '/v1/nodes', { body: { ...nodeBody(0), shard: 'a' }, version: '1.78' });
    const res = await bulk([nodeBody(1), { ...nodeBody(0), shard: 'a' }], '1.78');
    expect(res.status).toBe(406);
    expect(faultString(res)).toBe(`nodes[1]: ${faultString(single)}`);
    const portName = await bulk([{ ...nodeBody(0), ports: [{ address: mac(0), name: 'p0' }] }], '1.78');
    expect(portName.status).toBe(406);
    expect(faultString(portName)).toMatch(/^nodes\[0\]\.ports\[0\]: /);
    const newer = await bulk([{ ...nodeBody(0), shard: 'a', ports: [{ address: mac(0), name: 'p0' }] }], '1.88');
    expect(newer.status, JSON.stringify(newer.body)).toBe(201);
    expect(await counts()).toEqual({ nodes: 1, ports: 1 });
  });

  it('gives the conflicts of the single path for a duplicate MAC or name, in the body or against the database', async () => {
    const inBody = await bulk([
      { ...nodeBody(0), ports: [{ address: mac(0) }] },
      { ...nodeBody(1), ports: [{ address: mac(1) }, { address: '52:54:00:AA:00:00' }] },
    ]);
    expect(inBody.status).toBe(409);
    expect(faultString(inBody)).toBe(`nodes[1].ports[1]: A port with MAC address ${mac(0)} already exists.`);
    expect(await counts()).toEqual({ nodes: 0, ports: 0 });

    const nameInBody = await bulk([nodeBody(0), nodeBody(1), nodeBody(0)]);
    expect(nameInBody.status).toBe(409);
    expect(faultString(nameInBody)).toBe('nodes[2]: A node with name bulk-0 already exists.');
    expect(await counts()).toEqual({ nodes: 0, ports: 0 });

    const existing = await api.request('POST', '/v1/nodes', { body: nodeBody(5) });
    const existingPort = await api.request('POST', '/v1/ports', {
      body: { address: mac(5), node_uuid: existing.body.uuid },
    });
    expect(existingPort.status).toBe(201);
    const singleMac = await api.request('POST', '/v1/ports', {
      body: { address: mac(5), node_uuid: existing.body.uuid },
    });
    const singleName = await api.request('POST', '/v1/nodes', { body: nodeBody(5) });
    expect([singleMac.status, singleName.status]).toEqual([409, 409]);

    const macTaken = await bulk([
      { ...nodeBody(0), ports: [{ address: mac(0) }] },
      { ...nodeBody(1), ports: [{ address: mac(5) }] },
    ]);
    expect(macTaken.status).toBe(409);
    expect(faultString(macTaken)).toBe(`nodes[1].ports[0]: ${faultString(singleMac)}`);
    const nameTaken = await bulk([nodeBody(0), nodeBody(5)]);
    expect(nameTaken.status).toBe(409);
    expect(faultString(nameTaken)).toBe(`nodes[1]: ${faultString(singleName)}`);
    expect(await counts()).toEqual({ nodes: 1, ports: 1 });
  });

  it('takes at most [api]bulk_enrolment_max_nodes nodes and refuses a body that is not a list of nodes', async () => {
    const over = await bulk([nodeBody(0), nodeBody(1), nodeBody(2), nodeBody(3)]);
    expect(over.status).toBe(400);
    expect(faultString(over)).toBe(
      'A bulk enrolment creates at most 3 nodes ([api]bulk_enrolment_max_nodes); this one lists 4: split the list.',
    );
    expect(await counts()).toEqual({ nodes: 0, ports: 0 });
    expect((await bulk([nodeBody(0), nodeBody(1), nodeBody(2)])).status).toBe(201);
    for (const body of [{}, { nodes: [] }, { nodes: {} }, { nodes: [nodeBody(9)], more: 1 }, []]) {
      const res = await api.request('POST', '/v1/nodes/bulk', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(faultString(res)).toMatch(/^Schema error for bulk enrolment/);
    }
    const query = await api.request('POST', '/v1/nodes/bulk?dry_run=1', { body: { nodes: [nodeBody(9)] } });
    expect(query.status).toBe(400);
  });

  it('leaves the other methods on /v1/nodes/bulk to a node named bulk', async () => {
    expect((await api.request('GET', '/v1/nodes/bulk')).status).toBe(404);
    const named = await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'bulk' } });
    expect(named.status).toBe(201);
    expect((await api.request('GET', '/v1/nodes/bulk')).body.uuid).toBe(named.body.uuid);
    expect((await api.request('PUT', '/v1/nodes/bulk')).status).toBe(405);
  });
});

describe('POST /v1/nodes/bulk, larger lists', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('takes the default 1,000 nodes in a body over the 1 MB of other requests', async () => {
    const padding = 'x'.repeat(1200);
    const nodes = Array.from({ length: 1000 }, (_, i) => ({
      ...nodeBody(i, { extra: { padding } }),
      ports: [{ address: mac(i) }],
    }));
    expect(JSON.stringify({ nodes }).length).toBeGreaterThan(1_200_000);
    const res = await api.request('POST', '/v1/nodes/bulk', { body: { nodes } });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    expect(res.body.nodes.map((n: { name: string }) => n.name)).toEqual(nodes.map((_, i) => `bulk-${i}`));
    expect(res.body.nodes.map((n: { ports: Array<{ address: string }> }) => n.ports[0]?.address)).toEqual(
      nodes.map((_, i) => mac(i)),
    );
    const tooMany = await api.request('POST', '/v1/nodes/bulk', { body: { nodes: [...nodes, nodeBody(1000)] } });
    expect(tooMany.status).toBe(400);
    const big = await api.request('POST', '/v1/nodes', {
      body: nodeBody(2000, { extra: { padding: 'x'.repeat(1_100_000) } }),
    });
    expect(big.status).toBe(413);
  });
});

describe('POST /v1/nodes/bulk with http_basic', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    const hash = (await bcrypt.hash('s3cret', 4)).replace(/^\$2b\$/, '$2y$');
    api = await ApiHarness.start({ htpasswd: `admin:${hash}\n` });
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('needs the credentials every other request needs', async () => {
    const body = { nodes: [{ ...nodeBody(0), ports: [{ address: mac(0) }] }] };
    const anonymous = await api.request('POST', '/v1/nodes/bulk', { body });
    expect(anonymous.status).toBe(401);
    const wrong = await api.request('POST', '/v1/nodes/bulk', {
      body,
      headers: { Authorization: basicAuthorization('admin', 'nope') },
    });
    expect(wrong.status).toBe(401);
    expect(await api.stores.nodeCounts.count()).toBe(0);
    const res = await api.request('POST', '/v1/nodes/bulk', {
      body,
      headers: { Authorization: basicAuthorization('admin', 's3cret') },
    });
    expect(res.status).toBe(201);
    expect(await api.stores.nodeCounts.count()).toBe(1);
  });
});
