import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

/** Port fields and filters of 1.97-1.111, each below and at its version. */
describe('ports from 1.97', () => {
  let api: ApiHarness;
  let nodeA: string;
  let nodeB: string;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1', 'rack-1');
    await api.registerConductor('cond-2', 'rack-2');
    nodeA = await api.createNode({ name: 'node-a', conductor_group: 'Rack-1' }, '1.46');
    nodeB = await api.createNode({ name: 'node-b', conductor_group: 'rack-2' }, '1.46');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('ports').delete();
  });

  const create = (body: Record<string, unknown>, version: string) =>
    api.request('POST', '/v1/ports', { body: { node_uuid: nodeA, ...body }, version });

  it.each([
    ['description', 'rack 4, left', '1.97', 255],
    ['vendor', 'intel', '1.100', 32],
    ['category', 'storage', '1.101', 80],
  ] as const)(
    '%s: refused below %s (406), kept and shown from it, at most %s characters',
    async (field, value, version, max) => {
      const minor = Number(version.slice(2));
      const below = `1.${minor - 1}`;
      expect((await create({ address: '52:54:00:10:00:01', [field]: value }, below)).status).toBe(406);
      const res = await create({ address: '52:54:00:10:00:01', [field]: value }, version);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body[field]).toBe(value);
      const shown = async (v: string) => (await api.request('GET', `/v1/ports/${res.body.uuid}`, { version: v })).body;
      expect(await shown(below)).not.toHaveProperty(field);
      expect((await shown(version))[field]).toBe(value);
      const fields = await api.request('GET', `/v1/ports?fields=uuid,${field}`, { version: below });
      expect(fields.status).toBe(406);
      const patch = (v: string, op: Record<string, unknown>) =>
        api.request('PATCH', `/v1/ports/${res.body.uuid}`, { body: [op], version: v });
      expect((await patch(below, { op: 'replace', path: `/${field}`, value: 'x' })).status).toBe(406);
      expect((await patch(version, { op: 'replace', path: `/${field}`, value: 'x' })).body[field]).toBe('x');
      expect((await patch(version, { op: 'remove', path: `/${field}` })).body[field]).toBeNull();
      const long = await patch(version, { op: 'replace', path: `/${field}`, value: 'a'.repeat(max + 1) });
      expect(long.status).toBe(400);
      expect(faultString(long)).toContain(field);
    },
  );

  it('available_for_dynamic_portgroup: true by default, a boolean, from 1.111', async () => {
    expect(
      (await create({ address: '52:54:00:10:00:02', available_for_dynamic_portgroup: false }, '1.110')).status,
    ).toBe(406);
    const port = await create({ address: '52:54:00:10:00:02' }, '1.111');
    expect(port.body.available_for_dynamic_portgroup).toBe(true);
    const shown = await api.request('GET', `/v1/ports/${port.body.uuid}`, { version: '1.110' });
    expect(shown.body).not.toHaveProperty('available_for_dynamic_portgroup');
    const off = await api.request('PATCH', `/v1/ports/${port.body.uuid}`, {
      body: [{ op: 'replace', path: '/available_for_dynamic_portgroup', value: false }],
      version: '1.111',
    });
    expect(off.body.available_for_dynamic_portgroup).toBe(false);
    const notBoolean = await create({ address: '52:54:00:10:00:03', available_for_dynamic_portgroup: 'yes' }, '1.111');
    expect(notBoolean.status).toBe(400);
  });

  it('?conductor_groups= lists the ports of nodes in those groups from 1.99, alone', async () => {
    await create({ address: '52:54:00:10:00:04' }, '1.99');
    await create({ address: '52:54:00:10:00:05', node_uuid: nodeB }, '1.99');
    const list = async (query: string, version = '1.99') => api.request('GET', `/v1/ports?${query}`, { version });
    expect((await list('conductor_groups=rack-1', '1.98')).status).toBe(406);
    const one = await list('conductor_groups=RACK-1');
    expect(one.body.ports.map((p: { address: string }) => p.address)).toEqual(['52:54:00:10:00:04']);
    const both = await list('conductor_groups=rack-1,rack-2');
    expect(both.body.ports).toHaveLength(2);
    expect((await list('conductor_groups=rack-3')).body.ports).toEqual([]);
    const combined = await list(`conductor_groups=rack-1&node=${nodeA}`);
    expect(combined.status).toBe(400);
    expect(faultString(combined)).toContain('cannot be combined');
  });

  it('PATCH paths escape ~ and / in keys as JSON pointers (~0, ~1)', async () => {
    const port = await create({ address: '52:54:00:10:00:06' }, '1.98');
    const res = await api.request('PATCH', `/v1/ports/${port.body.uuid}`, {
      body: [
        { op: 'add', path: '/extra/a~1b', value: 1 },
        { op: 'add', path: '/extra/c~0d', value: 2 },
      ],
      version: '1.98',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.extra).toEqual({ 'a/b': 1, 'c~d': 2 });
    const unknown = await api.request('PATCH', `/v1/ports/${port.body.uuid}`, {
      body: [{ op: 'add', path: '/ex~1tra', value: 1 }],
      version: '1.98',
    });
    expect(unknown.status).toBe(400);
    expect(faultString(unknown)).toContain('Cannot patch /ex~1tra');
  });

  it('OVN VTEP keys: accepted 1.90-1.104, refused (406) and shown empty from 1.105', async () => {
    const vtep = { port_id: 'p1', 'vtep-logical-switch': 'ls1', 'vtep-physical-switch': 'ps1' };
    expect((await create({ address: '52:54:00:10:00:07', local_link_connection: vtep }, '1.105')).status).toBe(406);
    const port = await create({ address: '52:54:00:10:00:07', local_link_connection: vtep }, '1.104');
    expect(port.status).toBe(201);
    const link = async (version: string) =>
      (await api.request('GET', `/v1/ports/${port.body.uuid}`, { version })).body.local_link_connection;
    expect(await link('1.104')).toEqual(vtep);
    expect(await link('1.105')).toEqual({});
    const switchPort = { port_id: 'p1', switch_id: '0a:1b:2c:3d:4e:5f' };
    expect((await create({ address: '52:54:00:10:00:08', local_link_connection: switchPort }, '1.105')).status).toBe(
      201,
    );
  });
});
