import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';
import { MAX_MINOR, Minor } from '../versions.js';

/** The node fields Ironic lets users write after 1.31, with the version each needs. */
describe('/v1/nodes: ownership, protection, retirement, shards, parents, interfaces', () => {
  let api: ApiHarness;
  const LATEST = `1.${MAX_MINOR}`;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('nodes').delete();
  });

  const create = (body: Record<string, unknown>, version = LATEST) =>
    api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', ...body }, version });
  const patch = (ident: string, ops: unknown, version = LATEST) =>
    api.request('PATCH', `/v1/nodes/${ident}`, { body: ops, version });
  const get = (path: string, version = LATEST) => api.request('GET', path, { version });
  const setState = async (uuid: string, provisionState: string) => {
    const node = await api.stores.nodes.getByUuid(uuid);
    await api.stores.nodes.update(node!.id, { provisionState });
  };

  it('creates, shows, patches and clears every writable field, with Ironic defaults', async () => {
    const created = await create({
      name: 'full',
      owner: 'project-a',
      lessee: 'project-b',
      network_data: { links: [], networks: [], services: [] },
      shard: 'shard-1',
      inspect_interface: 'fake',
      raid_interface: 'fake',
      bios_interface: 'fake',
      vendor_interface: 'no-vendor',
      console_interface: 'no-console',
      rescue_interface: 'fake',
      storage_interface: 'noop',
      network_interface: 'noop',
      boot_mode: 'uefi',
      secure_boot: 'true',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      owner: 'project-a',
      lessee: 'project-b',
      shard: 'shard-1',
      parent_node: null,
      protected: false,
      protected_reason: null,
      retired: false,
      retired_reason: null,
      inspect_interface: 'fake',
      raid_interface: 'fake',
      bios_interface: 'fake',
      rescue_interface: 'fake',
      boot_mode: 'uefi',
      secure_boot: true,
      network_data: { links: [], networks: [], services: [] },
      power_state: null,
    });
    const uuid = created.body.uuid as string;
    const patched = await patch(uuid, [
      { op: 'replace', path: '/owner', value: 'project-c' },
      { op: 'remove', path: '/lessee' },
      { op: 'replace', path: '/retired', value: true },
      { op: 'add', path: '/retired_reason', value: 'end of life' },
      { op: 'replace', path: '/raid_interface', value: 'no-raid' },
      { op: 'replace', path: '/description', value: 'rack 7' },
      { op: 'add', path: '/extra/slot', value: 3 },
    ]);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      owner: 'project-c',
      lessee: null,
      retired: true,
      retired_reason: 'end of life',
      raid_interface: 'no-raid',
      description: 'rack 7',
      extra: { slot: 3 },
    });
    const unretired = await patch(uuid, [{ op: 'replace', path: '/retired', value: false }]);
    expect(unretired.body).toMatchObject({ retired: false, retired_reason: null });
    const reset = await patch(uuid, [{ op: 'remove', path: '/inspect_interface' }]);
    expect(reset.body.inspect_interface).toBe('no-inspect');
    expect((await get(`/v1/nodes/${uuid}`)).body).toMatchObject({
      owner: 'project-c',
      inspect_interface: 'no-inspect',
    });
    expect((await api.request('DELETE', `/v1/nodes/${uuid}`)).status).toBe(204);
  });

  it('answers the new fields only from their version, and refuses them in older requests with 406', async () => {
    const node = await create({});
    const uuid = node.body.uuid as string;
    const at = async (version: string) => (await get(`/v1/nodes/${uuid}`, version)).body;
    expect(await at('1.81')).not.toHaveProperty('shard');
    expect(await at('1.82')).toHaveProperty('shard', null);
    expect(await at('1.82')).not.toHaveProperty('parent_node');
    expect(await at('1.83')).toHaveProperty('parent_node', null);
    expect(await at('1.49')).not.toHaveProperty('owner');
    for (const [field, value, version] of [
      ['owner', 'x', '1.49'],
      ['lessee', 'x', '1.64'],
      ['network_data', {}, '1.65'],
      ['shard', 'x', '1.81'],
      ['parent_node', uuid, '1.82'],
      ['bios_interface', 'no-bios', '1.39'],
      ['storage_interface', 'noop', '1.32'],
      ['boot_mode', 'uefi', '1.74'],
    ] as const) {
      const refused = await create({ [field]: value }, version);
      expect(refused.status, `${field} at ${version}`).toBe(406);
    }
    const old = await patch(uuid, [{ op: 'add', path: '/owner', value: 'x' }], '1.49');
    expect(old.status).toBe(406);
    expect(faultString(old)).toBe('Request not acceptable. The minimal required API version should be 1.50');
    if (MAX_MINOR < Minor.FIRMWARE_INTERFACE) {
      expect((await create({ firmware_interface: 'fake' })).status).toBe(406);
    }
    if (MAX_MINOR < Minor.DISABLE_POWER_OFF) expect((await create({ disable_power_off: true })).status).toBe(406);
  });

  it('refuses bad input with Ironic messages', async () => {
    const badUuid = await create({ uuid: 'not-a-uuid' });
    expect(badUuid.status).toBe(400);
    expect(faultString(badUuid)).toBe('Expected UUID for uuid: not-a-uuid');
    expect(faultString(await create({ instance_uuid: 'nope' }))).toBe('Expected UUID for instance_uuid: nope');
    expect(faultString(await create({ driver: 'no-such-hw' }))).toMatch(/^No valid host was found\. Reason: /);
    expect(faultString(await create({ raid_interface: 'megaraid' }))).toBe(
      "Could not find the following interface in the 'ironic.hardware.interfaces.raid' entrypoint: megaraid. Valid interfaces are fake, no-raid.",
    );
    expect(faultString(await create({ retired_reason: 'why' }))).toBe(
      'The retired_reason field can only be set when retired is True',
    );
    expect(faultString(await create({ boot_mode: 'legacy' }))).toContain('boot_mode');
    expect(faultString(await create({ parent_node: 'nobody' }))).toBe('Node nobody could not be found.');
    const node = await create({ name: 'n1' });
    const uuid = node.body.uuid as string;
    const missing = await patch(uuid, [{ op: 'remove', path: '/extra/missing' }]);
    expect(missing.status).toBe(400);
    expect(faultString(missing)).toBe(
      "Couldn't apply patch '[{'op': 'remove', 'path': '/extra/missing'}]'. Reason: can't remove a non-existent object 'missing'",
    );
    expect(faultString(await patch(uuid, [{ op: 'replace', path: '/instance_uuid', value: 'x' }]))).toBe(
      'Expected UUID for instance_uuid: x',
    );
    expect(faultString(await patch(uuid, [{ op: 'add', path: '/parent_node', value: uuid }]))).toBe(
      `Node ${uuid} cannot be its own parent node.`,
    );
  });

  it("applies Ironic's protected and retired state rules", async () => {
    const node = await create({});
    const uuid = node.body.uuid as string;
    const early = await patch(uuid, [{ op: 'replace', path: '/protected', value: true }]);
    expect(early.status).toBe(409);
    expect(faultString(early)).toBe(
      `Node ${uuid} can only be made protected in provision states 'active' or 'rescue', the current state is 'enroll'`,
    );
    expect(faultString(await patch(uuid, [{ op: 'add', path: '/protected_reason', value: 'x' }]))).toBe(
      'The protected_reason field can only be set when protected is True',
    );
    await setState(uuid, 'active');
    const protectedNode = await patch(uuid, [
      { op: 'replace', path: '/protected', value: true },
      { op: 'add', path: '/protected_reason', value: 'production' },
    ]);
    expect(protectedNode.body).toMatchObject({ protected: true, protected_reason: 'production' });
    await patch(uuid, [{ op: 'replace', path: '/maintenance', value: true }]);
    const refused = await api.request('DELETE', `/v1/nodes/${uuid}`);
    expect(refused.status).toBe(403);
    expect(faultString(refused)).toBe(`Node ${uuid} is protected and cannot be undeployed, rebuilt or deleted`);
    const cleared = await patch(uuid, [{ op: 'replace', path: '/protected', value: false }]);
    expect(cleared.body).toMatchObject({ protected: false, protected_reason: null });
    await setState(uuid, 'available');
    const retire = await patch(uuid, [{ op: 'replace', path: '/retired', value: true }]);
    expect(retire.status).toBe(409);
    expect(faultString(retire)).toBe(
      `Node ${uuid} can not have 'retired' set in provision state 'available', the current state is 'available'`,
    );
  });

  it('filters by owner, lessee, project, instance_uuid, retired, fault, shard, description and parents', async () => {
    const instance = '22222222-3333-4444-8555-666666666666';
    const a = (await create({ name: 'a', owner: 'p1', shard: 's1', description: 'rack 7 top' })).body;
    const b = (await create({ name: 'b', lessee: 'p1', shard: 's2', instance_uuid: instance })).body;
    const c = (await create({ name: 'c', retired: true, parent_node: 'a' })).body;
    expect(c.parent_node).toBe(a.uuid);
    const fromB = await api.stores.nodes.getByUuid(b.uuid as string);
    await api.stores.nodes.update(fromB!.id, { fault: 'power failure' });
    const names = async (query: string, version = LATEST) => {
      const res = await get(`/v1/nodes?${query}`, version);
      expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
      return (res.body.nodes as Array<{ name: string }>).map((n) => n.name).sort();
    };
    expect(await names('')).toEqual(['a', 'b']);
    expect(await names('include_children=true')).toEqual(['a', 'b', 'c']);
    expect(await names(`parent_node=${a.uuid}`)).toEqual(['c']);
    expect(await names('owner=p1')).toEqual(['a']);
    expect(await names('lessee=p1')).toEqual(['b']);
    expect(await names('project=p1')).toEqual(['a', 'b']);
    expect(await names(`instance_uuid=${instance}`)).toEqual(['b']);
    expect(await names('retired=true&include_children=true')).toEqual(['c']);
    expect(await names('retired=false')).toEqual(['a', 'b']);
    expect(await names('fault=power%20failure')).toEqual(['b']);
    expect(await names('shard=s1,s2')).toEqual(['a', 'b']);
    expect(await names('sharded=false&include_children=1')).toEqual(['c']);
    expect(await names('description_contains=rack%207')).toEqual(['a']);
    expect(await names('description_contains=%25')).toEqual([]);
    expect(await names('conductor=cond-1')).toEqual(['a', 'b']);
    expect(await names('conductor=elsewhere')).toEqual([]);
    for (const [query, version] of [
      ['owner=p1', '1.49'],
      ['lessee=p1', '1.64'],
      ['retired=true', '1.60'],
      ['fault=x', '1.41'],
      ['shard=s1', '1.81'],
      ['parent_node=a', '1.82'],
      ['conductor=cond-1', '1.48'],
      ['description_contains=x', '1.50'],
    ]) {
      expect((await get(`/v1/nodes?${query}`, version as string)).status, `${query} at ${version}`).toBe(406);
    }
    expect(faultString(await get('/v1/nodes?instance_uuid=bad'))).toBe('Expected UUID for instance_uuid: bad');
    expect((await get('/v1/nodes?retired=maybe')).status).toBe(400);
    const children = await get(`/v1/nodes/a/children`);
    expect(children.body.children).toEqual([c.uuid]);
    expect((await get('/v1/nodes/a/children', '1.82')).status).toBe(404);
    const shards = await get('/v1/shards');
    const byName = (x: { name: string }, y: { name: string }) => x.name.localeCompare(y.name);
    expect([...shards.body.shards].sort(byName)).toEqual([
      { name: 'None', count: 1 },
      { name: 's1', count: 1 },
      { name: 's2', count: 1 },
    ]);
    expect((await get('/v1/shards', '1.81')).status).toBe(404);
  });

  it('answers traits with the node (from 1.37), one query for a whole page', async () => {
    const node = (await create({ name: 'traited' })).body;
    await api.stores.nodeTraits.replace((await api.stores.nodes.getByUuid(node.uuid as string))!.id, [
      'CUSTOM_B',
      'CUSTOM_A',
    ]);
    expect((await get('/v1/nodes/traited')).body.traits).toEqual(['CUSTOM_A', 'CUSTOM_B']);
    expect((await get('/v1/nodes/detail')).body.nodes[0].traits).toEqual(['CUSTOM_A', 'CUSTOM_B']);
    expect((await get('/v1/nodes?fields=uuid,traits')).body.nodes[0].traits).toEqual(['CUSTOM_A', 'CUSTOM_B']);
    expect((await get('/v1/nodes/traited', '1.36')).body).not.toHaveProperty('traits');
  });
});
