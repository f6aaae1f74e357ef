import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

describe('/v1/chassis', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { max_limit: 2 } } });
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('creates, shows, lists, patches and deletes a chassis', async () => {
    const created = await api.request('POST', '/v1/chassis', { body: { description: 'rack 1', extra: { row: 'a' } } });
    expect(created.status).toBe(201);
    const uuid = created.body.uuid;
    expect(created.headers.get('location')).toBe(`${api.baseUrl}/v1/chassis/${uuid}`);
    expect(Object.keys(created.body).sort()).toEqual(
      ['created_at', 'description', 'extra', 'links', 'nodes', 'updated_at', 'uuid'].sort(),
    );
    expect(created.body.nodes[0].href).toBe(`${api.baseUrl}/v1/chassis/${uuid}/nodes`);

    const shown = await api.request('GET', `/v1/chassis/${uuid}?fields=description`);
    expect(shown.body).toEqual({ description: 'rack 1', links: expect.any(Array) });

    const list = await api.request('GET', '/v1/chassis');
    expect(list.body.chassis).toEqual([{ uuid, description: 'rack 1', links: expect.any(Array) }]);
    const detail = await api.request('GET', '/v1/chassis/detail');
    expect(detail.body.chassis[0].extra).toEqual({ row: 'a' });

    const patched = await api.request('PATCH', `/v1/chassis/${uuid}`, {
      body: [
        { op: 'replace', path: '/description', value: 'rack 2' },
        { op: 'add', path: '/extra/slot', value: 3 },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ description: 'rack 2', extra: { row: 'a', slot: 3 } });
    expect(patched.body.updated_at).not.toBeNull();

    expect((await api.request('DELETE', `/v1/chassis/${uuid}`)).status).toBe(204);
    const gone = await api.request('GET', `/v1/chassis/${uuid}`);
    expect(gone.status).toBe(404);
    expect(faultString(gone)).toBe(`Chassis ${uuid} could not be found.`);
  });

  it('holds nodes: chassis_uuid on the node, /chassis/{id}/nodes, no delete while it has nodes', async () => {
    const chassis = (await api.request('POST', '/v1/chassis', { body: {} })).body.uuid;
    const node = await api.request('POST', '/v1/nodes', {
      body: { driver: 'fake-hardware', name: 'in-chassis', chassis_uuid: chassis },
    });
    expect(node.status).toBe(201);
    expect(node.body.chassis_uuid).toBe(chassis);
    await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'outside' } });

    const nodes = await api.request('GET', `/v1/chassis/${chassis}/nodes`);
    expect(nodes.status).toBe(200);
    expect(nodes.body.nodes.map((n: { name: string }) => n.name)).toEqual(['in-chassis']);
    const detail = await api.request('GET', `/v1/chassis/${chassis}/nodes/detail`);
    expect(detail.body.nodes[0].chassis_uuid).toBe(chassis);

    const refused = await api.request('DELETE', `/v1/chassis/${chassis}`);
    expect(refused.status).toBe(400);
    expect(faultString(refused)).toBe(
      `Cannot complete the requested action because chassis ${chassis} contains nodes.`,
    );

    const unknown = crypto.randomUUID();
    const badNode = await api.request('POST', '/v1/nodes', {
      body: { driver: 'fake-hardware', chassis_uuid: unknown },
    });
    expect(badNode.status).toBe(400);
    expect(faultString(badNode)).toBe(`Chassis ${unknown} could not be found.`);

    const tooOld = await api.request('PATCH', '/v1/nodes/in-chassis', {
      body: [{ op: 'remove', path: '/chassis_uuid' }],
      version: '1.24',
    });
    expect(tooOld.status).toBe(406);
    const moved = await api.request('PATCH', '/v1/nodes/in-chassis', {
      body: [{ op: 'remove', path: '/chassis_uuid' }],
    });
    expect(moved.body.chassis_uuid).toBeNull();
    expect((await api.request('DELETE', `/v1/chassis/${chassis}`)).status).toBe(204);
  });

  it('refuses bad input with Ironic texts', async () => {
    const badUuid = await api.request('GET', '/v1/chassis/not-a-uuid');
    expect(badUuid.status).toBe(400);
    expect(faultString(badUuid)).toBe('Expected UUID for uuid: not-a-uuid');
    const extraField = await api.request('POST', '/v1/chassis', { body: { name: 'x' } });
    expect(extraField.status).toBe(400);
    expect(faultString(extraField)).toContain("'name' was unexpected");
    const long = await api.request('POST', '/v1/chassis', { body: { description: 'x'.repeat(256) } });
    expect(long.status).toBe(400);
    const badPatch = await api.request('PATCH', `/v1/chassis/${crypto.randomUUID()}`, {
      body: [{ op: 'replace', path: '/uuid', value: crypto.randomUUID() }],
    });
    expect(badPatch.status).toBe(404);
    const chassis = (await api.request('POST', '/v1/chassis', { body: {} })).body.uuid;
    const uuidPatch = await api.request('PATCH', `/v1/chassis/${chassis}`, {
      body: [{ op: 'replace', path: '/uuid', value: crypto.randomUUID() }],
    });
    expect(uuidPatch.status).toBe(400);
    const duplicate = await api.request('POST', '/v1/chassis', { body: { uuid: chassis } });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toBe(`A chassis with UUID ${chassis} already exists.`);
    expect((await api.request('PUT', `/v1/chassis/${chassis}`)).status).toBe(405);
    expect((await api.request('GET', '/v1/chassis?sort_key=extra')).status).toBe(400);
  });

  it('pages with a next link that keeps the sort', async () => {
    await api.database.db('nodes').update({ chassis_uuid: null });
    await api.database.db('chassis').delete();
    for (const description of ['a', 'b', 'c']) await api.request('POST', '/v1/chassis', { body: { description } });
    const first = await api.request('GET', '/v1/chassis?sort_key=description&sort_dir=desc');
    expect(first.body.chassis.map((c: { description: string }) => c.description)).toEqual(['c', 'b']);
    const next = new URL(first.body.next);
    expect(next.searchParams.get('sort_key')).toBe('description');
    const second = await api.request('GET', `${next.pathname}${next.search}`);
    expect(second.body.chassis.map((c: { description: string }) => c.description)).toEqual(['a']);
  });

  it('is there from 1.1', async () => {
    expect((await api.request('GET', '/v1/chassis', { version: null })).status).toBe(200);
  });

  it('GET /v1 links each resource from the version that added it', async () => {
    const names = ['portgroups', 'volume', 'allocations', 'deploy_templates', 'runbooks'];
    const at = async (version: string) => {
      const body = (await api.request('GET', '/v1', { version })).body;
      return names.filter((name) => body[name] !== undefined);
    };
    expect(await at('1.22')).toEqual([]);
    expect(await at('1.23')).toEqual(['portgroups']);
    expect(await at('1.55')).toEqual(['portgroups', 'volume', 'allocations', 'deploy_templates']);
    expect(await at('1.92')).toEqual(names);
    const body = (await api.request('GET', '/v1', { version: '1.92' })).body;
    expect(body.runbooks[0].href).toBe(`${api.baseUrl}/v1/runbooks/`);
  });
});
