import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

/** Portgroup fields and filters of 1.99-1.111, each below and at its version. */
describe('portgroups from 1.99', () => {
  let api: ApiHarness;
  let nodeA: string;
  let nodeB: string;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1', 'rack-1');
    await api.registerConductor('cond-2', 'rack-2');
    nodeA = await api.createNode({ name: 'pg-a', conductor_group: 'rack-1', shard: 'shard-a' }, '1.82');
    nodeB = await api.createNode({ name: 'pg-b', conductor_group: 'rack-2', shard: 'shard-b' }, '1.82');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('ports').delete();
    await api.database.db('portgroups').delete();
  });
  const createPortgroup = (body: Record<string, unknown>, version: string) =>
    api.request('POST', '/v1/portgroups', { body: { node_uuid: nodeA, ...body }, version });

  it.each([
    ['physical_network', 'physnet1', '1.102', 64],
    ['category', 'bond', '1.103', 80],
  ] as const)(
    '%s: refused below %s (406), kept and shown from it, at most %s characters',
    async (field, value, version, max) => {
      const below = `1.${Number(version.slice(2)) - 1}`;
      expect((await createPortgroup({ [field]: value }, below)).status).toBe(406);
      const created = await createPortgroup({ [field]: value }, version);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body[field]).toBe(value);
      const shown = async (v: string) =>
        (await api.request('GET', `/v1/portgroups/${created.body.uuid}`, { version: v })).body;
      expect(await shown(below)).not.toHaveProperty(field);
      expect((await shown(version))[field]).toBe(value);
      expect((await api.request('GET', `/v1/portgroups?fields=${field}`, { version: below })).status).toBe(406);
      const long = await api.request('PATCH', `/v1/portgroups/${created.body.uuid}`, {
        body: [{ op: 'replace', path: `/${field}`, value: 'a'.repeat(max + 1) }],
        version,
      });
      expect(long.status).toBe(400);
      expect(faultString(long)).toContain(field);
    },
  );

  it("a portgroup's physical network becomes its ports'", async () => {
    const pg = (await createPortgroup({ physical_network: 'physnet1' }, '1.102')).body;
    const port = await api.request('POST', '/v1/ports', {
      body: { address: '52:54:00:20:00:01', node_uuid: nodeA, portgroup_uuid: pg.uuid, pxe_enabled: true },
      version: '1.102',
    });
    expect(port.status, JSON.stringify(port.body)).toBe(201);
    const patched = await api.request('PATCH', `/v1/portgroups/${pg.uuid}`, {
      body: [{ op: 'replace', path: '/physical_network', value: 'physnet2' }],
      version: '1.102',
    });
    expect(patched.body.physical_network).toBe('physnet2');
    const shown = await api.request('GET', `/v1/ports/${port.body.uuid}`, { version: '1.102' });
    expect(shown.body.physical_network).toBe('physnet2');
  });

  it('dynamic_portgroup: false for a portgroup made through the API, shown from 1.111, not writable', async () => {
    const pg = (await createPortgroup({}, '1.111')).body;
    expect(pg.dynamic_portgroup).toBe(false);
    const older = await api.request('GET', `/v1/portgroups/${pg.uuid}`, { version: '1.110' });
    expect(older.body).not.toHaveProperty('dynamic_portgroup');
    expect((await createPortgroup({ dynamic_portgroup: true }, '1.111')).status).toBe(400);
    const patch = await api.request('PATCH', `/v1/portgroups/${pg.uuid}`, {
      body: [{ op: 'replace', path: '/dynamic_portgroup', value: true }],
      version: '1.111',
    });
    expect(patch.status).toBe(400);
  });

  it('?conductor_groups= (1.99) and ?shard= (1.106) list the portgroups of those nodes, one filter at a time', async () => {
    await createPortgroup({ name: 'bond-a' }, '1.99');
    await createPortgroup({ name: 'bond-b', node_uuid: nodeB }, '1.99');
    const names = async (query: string, version: string) => {
      const res = await api.request('GET', `/v1/portgroups?${query}`, { version });
      return res.status === 200 ? res.body.portgroups.map((pg: { name: string }) => pg.name) : res.status;
    };
    expect(await names('conductor_groups=rack-1', '1.98')).toBe(406);
    expect(await names('conductor_groups=RACK-1', '1.99')).toEqual(['bond-a']);
    expect(await names('conductor_groups=rack-1,rack-2', '1.99')).toEqual(['bond-a', 'bond-b']);
    expect(await names('shard=shard-b', '1.105')).toBe(406);
    expect(await names('shard=shard-b', '1.106')).toEqual(['bond-b']);
    expect(await names('shard=shard-x', '1.106')).toEqual([]);
    const both = await api.request('GET', '/v1/portgroups?shard=shard-a&conductor_groups=rack-1', { version: '1.106' });
    expect(both.status).toBe(400);
    expect(faultString(both)).toContain('simultaneously');
  });
});
