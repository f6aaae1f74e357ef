import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf, faultString } from '../testing/api-harness.js';

/** Field names of a node as real Ironic answers `node create` at 1.78 (reference vectors). */
const IRONIC_NODE_KEYS = [
  'uuid', 'created_at', 'updated_at', 'automated_clean', 'bios_interface', 'boot_interface', 'boot_mode', 'clean_step',
  'conductor_group', 'console_enabled', 'console_interface', 'deploy_interface', 'deploy_step', 'description', 'driver',
  'driver_info', 'driver_internal_info', 'extra', 'fault', 'inspection_finished_at', 'inspection_started_at',
  'inspect_interface', 'instance_info', 'instance_uuid', 'last_error', 'lessee', 'maintenance', 'maintenance_reason',
  'management_interface', 'name', 'network_data', 'network_interface', 'owner', 'power_interface', 'power_state',
  'properties', 'protected', 'protected_reason', 'provision_state', 'provision_updated_at', 'raid_config',
  'raid_interface', 'rescue_interface', 'reservation', 'resource_class', 'retired', 'retired_reason', 'secure_boot',
  'storage_interface', 'target_power_state', 'target_provision_state', 'target_raid_config', 'traits',
  'vendor_interface', 'links', 'conductor', 'allocation_uuid', 'chassis_uuid', 'ports', 'states', 'portgroups', 'volume',
]; // biome-ignore format: a reference list reads best packed

describe('/v1/nodes', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { max_limit: 3 } } });
    await api.registerConductor('cond-1');
    await api.registerConductor('cond-rack', 'rack-a');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('nodes').delete();
  });

  const create = (body: Record<string, unknown>, version?: string) =>
    api.request('POST', '/v1/nodes', { body, ...(version ? { version } : {}) });
  async function createdNode(body: Record<string, unknown> = {}) {
    const res = await create({ driver: 'fake-hardware', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  describe('POST', () => {
    it('starts a node available below 1.11 and in enroll from 1.11, as Ironic does', async () => {
      const older = await create({ driver: 'fake-hardware' }, '1.10');
      expect(older.status, JSON.stringify(older.body)).toBe(201);
      expect(older.body.provision_state).toBe('available');
      expect((await api.stores.nodes.getByUuid(older.body.uuid))?.provisionState).toBe('available');
      const enrolled = await create({ driver: 'fake-hardware' }, '1.11');
      expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(201);
      expect(enrolled.body.provision_state).toBe('enroll');
      const unversioned = await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware' }, version: null });
      expect(unversioned.status).toBe(201);
      // 1.1 names available "None" (NOSTATE); the node is stored available.
      expect(unversioned.body.provision_state).toBeNull();
      expect((await api.stores.nodes.getByUuid(unversioned.body.uuid))?.provisionState).toBe('available');
    });

    it('creates an enroll node with default interfaces, every Ironic field and a Location', async () => {
      const res = await create({ driver: 'fake-hardware', name: 'node-1' });
      expect(res.status).toBe(201);
      expect(res.headers.get('location')).toBe(`${api.baseUrl}/v1/nodes/${res.body.uuid}`);
      expect(Object.keys(res.body).sort()).toEqual([...IRONIC_NODE_KEYS].sort());
      expect(res.body).toMatchObject({
        name: 'node-1',
        driver: 'fake-hardware',
        provision_state: 'enroll',
        power_state: null,
        boot_interface: 'fake',
        deploy_interface: 'fake',
        power_interface: 'fake',
        management_interface: 'fake',
        bios_interface: 'no-bios',
        console_interface: 'no-console',
        network_interface: 'noop',
        conductor: 'cond-1',
        conductor_group: '',
        maintenance: false,
        traits: [],
        driver_info: {},
        updated_at: null,
      });
      expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00$/);
      expect(res.body.links).toEqual([
        { href: `${api.baseUrl}/v1/nodes/${res.body.uuid}`, rel: 'self' },
        { href: `${api.baseUrl}/nodes/${res.body.uuid}`, rel: 'bookmark' },
      ]);
    });

    it('takes a given uuid and interfaces the conductors enabled, and stores the writable fields', async () => {
      const uuid = '11111111-2222-4333-8444-555555555555';
      const node = await createdNode({
        uuid,
        boot_interface: 'ipxe',
        deploy_interface: 'direct',
        driver_info: { ipmi_address: '10.0.0.1', ipmi_password: 'secret' },
        properties: { cpus: 4 },
        extra: { rack: 7 },
        instance_info: { image_source: 'http://img' },
        resource_class: 'baremetal',
        description: 'first',
        automated_clean: 'false',
        conductor_group: 'Rack-A',
      });
      expect(node).toMatchObject({
        uuid,
        boot_interface: 'ipxe',
        deploy_interface: 'direct',
        driver_info: { ipmi_address: '10.0.0.1', ipmi_password: '******' },
        properties: { cpus: 4 },
        extra: { rack: 7 },
        resource_class: 'baremetal',
        description: 'first',
        automated_clean: false,
        conductor_group: 'rack-a',
        conductor: 'cond-rack',
      });
      const stored = await api.stores.nodes.getByUuid(uuid);
      expect(stored?.driverInfo).toEqual({ ipmi_address: '10.0.0.1', ipmi_password: 'secret' });
    });

    it.each([
      [{}, "'driver' is a required property"],
      [{ driver: 'fake-hardware', protected: true }, "('protected' was unexpected)"],
      [{ driver: 'fake-hardware', uuid: 'not-a-uuid' }, 'uuid'],
      [{ driver: 'fake-hardware', extra: 'x' }, 'extra'],
      [{ driver: 'fake-hardware', name: 'has space' }, "invalid name 'has space'"],
      [{ driver: 'fake-hardware', name: '11111111-2222-4333-8444-555555555555' }, 'invalid name'],
      [{ driver: 'fake-hardware', name: 'detail' }, 'reserved'],
      [{ driver: 'fake-hardware', conductor_group: 'bad group!' }, 'Expected a conductor group'],
      [{ driver: 'fake-hardware', boot_interface: 'pxe' }, 'boot'],
      [{ driver: 'no-such-hardware' }, 'No conductor service registered which supports driver no-such-hardware'],
      [{ driver: 'fake-hardware', conductor_group: 'lonely' }, 'for conductor group "lonely"'],
    ])('refuses %j with 400', async (body, message) => {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(faultOf(res.body).faultcode).toBe('Client');
      expect(faultString(res)).toContain(message);
    });

    it('accepts RFC 3986 unreserved names and refuses duplicate names and uuids with 409', async () => {
      const node = await createdNode({ name: 'a~b.c_d-E' });
      expect((await create({ driver: 'fake-hardware', name: 'a~b.c_d-E' })).status).toBe(409);
      expect((await create({ driver: 'fake-hardware', uuid: node.uuid })).status).toBe(409);
    });

    it('refuses fields newer than the request version with 406', async () => {
      expect((await create({ driver: 'fake-hardware', name: 'old' }, '1.4')).status).toBe(406);
      expect((await create({ driver: 'fake-hardware', boot_interface: 'fake' }, '1.30')).status).toBe(406);
      expect((await create({ driver: 'fake-hardware', conductor_group: 'rack-a' }, '1.45')).status).toBe(406);
      expect((await create({ driver: 'fake-hardware', name: 'ok' }, '1.5')).status).toBe(201);
    });

    it('answers 503 when no conductor is alive at all', async () => {
      await api.stores.conductors.markOffline('cond-1');
      await api.stores.conductors.markOffline('cond-rack');
      try {
        const res = await create({ driver: 'fake-hardware' });
        expect(res.status).toBe(503);
        expect(faultOf(res.body).faultcode).toBe('Server');
      } finally {
        await api.registerConductor('cond-1');
        await api.registerConductor('cond-rack', 'rack-a');
      }
    });
  });

  describe('GET one', () => {
    it('finds a node by uuid and by name, and answers 404 for unknown ones', async () => {
      const node = await createdNode({ name: 'by-name' });
      expect((await api.request('GET', `/v1/nodes/${node.uuid}`)).body.name).toBe('by-name');
      expect((await api.request('GET', '/v1/nodes/by-name')).body.uuid).toBe(node.uuid);
      const missing = await api.request('GET', '/v1/nodes/nobody');
      expect(missing.status).toBe(404);
      expect(faultString(missing)).toBe('Node nobody could not be found.');
      expect((await api.request('GET', '/v1/nodes/bad%20name')).status).toBe(400);
    });

    it('answers the requested fields only, checking names and versions', async () => {
      const node = await createdNode({ name: 'fields' });
      const res = await api.request('GET', `/v1/nodes/${node.uuid}?fields=uuid,name,conductor`);
      expect(Object.keys(res.body).sort()).toEqual(['conductor', 'links', 'name', 'uuid']);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}?fields=uuid,bogus`)).status).toBe(400);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}?fields=uuid`, { version: '1.7' })).status).toBe(406);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}?fields=conductor`, { version: '1.48' })).status).toBe(
        406,
      );
    });

    it('shows older clients the fields and state names of their version', async () => {
      const node = await createdNode({ name: 'old-view' });
      await api.stores.nodes.update((await api.stores.nodes.getByUuid(node.uuid))!.id, { provisionState: 'available' });
      const old = await api.request('GET', `/v1/nodes/${node.uuid}`, { version: null });
      expect(old.body.provision_state).toBeNull();
      for (const hidden of ['name', 'boot_interface', 'conductor', 'conductor_group', 'states', 'portgroups']) {
        expect(old.body, hidden).not.toHaveProperty(hidden);
      }
      const v2 = await api.request('GET', `/v1/nodes/${node.uuid}`, { version: '1.2' });
      expect(v2.body.provision_state).toBe('available');
    });
  });

  describe('GET list', () => {
    it('lists default fields, details, and filters', async () => {
      const a = await createdNode({ name: 'a', resource_class: 'gold' });
      const b = await createdNode({ name: 'b', conductor_group: 'rack-a', maintenance: true });
      await api.stores.nodes.update((await api.stores.nodes.getByUuid(b.uuid))!.id, {
        provisionState: 'manageable',
        instanceUuid: '99999999-2222-4333-8444-555555555555',
      });
      const list = await api.request('GET', '/v1/nodes');
      expect(list.body.nodes).toHaveLength(2);
      expect(Object.keys(list.body.nodes[0]).sort()).toEqual(
        ['instance_uuid', 'links', 'maintenance', 'name', 'power_state', 'provision_state', 'uuid'].sort(),
      );
      expect(list.body.next).toBeUndefined();
      const detail = await api.request('GET', '/v1/nodes/detail');
      expect(Object.keys(detail.body.nodes[0]).sort()).toEqual([...IRONIC_NODE_KEYS].sort());
      expect((await api.request('GET', '/v1/nodes?detail=True')).body.nodes[0]).toHaveProperty('driver_info');

      const names = async (query: string) =>
        (await api.request('GET', `/v1/nodes?${query}`)).body.nodes.map((n: { name: string }) => n.name);
      expect(await names('provision_state=manageable')).toEqual(['b']);
      expect(await names('conductor_group=RACK-A')).toEqual(['b']);
      expect(await names('maintenance=false')).toEqual(['a']);
      expect(await names('associated=true')).toEqual(['b']);
      expect(await names('resource_class=gold')).toEqual(['a']);
      expect(await names('driver=fake-hardware')).toEqual(['a', 'b']);
      expect(await names('driver=other')).toEqual([]);
      expect(a.uuid).toBeDefined();

      expect((await api.request('GET', '/v1/nodes?provision_state=sleeping')).status).toBe(400);
      expect((await api.request('GET', '/v1/nodes?maintenance=perhaps')).status).toBe(400);
      expect((await api.request('GET', '/v1/nodes?driver=x', { version: '1.15' })).status).toBe(406);
      expect((await api.request('GET', '/v1/nodes?fields=uuid&detail=true')).status).toBe(400);
      const unsupported = await api.request('GET', '/v1/nodes?chassis_uuid=x');
      expect(unsupported.status).toBe(400);
      expect(faultString(unsupported)).toBe('Unknown argument: "chassis_uuid"');
      expect((await api.request('GET', '/v1/nodes/detail?fields=uuid')).status).toBe(400);
    });

    it('pages with limit, marker and sort, and links the next page when one is full', async () => {
      for (const name of ['n1', 'n2', 'n3', 'n4', 'n5']) await createdNode({ name });
      for (const limit of ['0', '-1', 'abc']) {
        const res = await api.request('GET', `/v1/nodes?limit=${limit}`);
        expect(res.status, limit).toBe(400);
      }
      const capped = await api.request('GET', '/v1/nodes?limit=50');
      expect(capped.body.nodes.map((n: { name: string }) => n.name)).toEqual(['n1', 'n2', 'n3']);
      const next = new URL(capped.body.next);
      expect(`${next.origin}${next.pathname}`).toBe(`${api.baseUrl}/v1/nodes`);
      expect(next.searchParams.get('limit')).toBe('3');
      expect(next.searchParams.get('marker')).toBe(capped.body.nodes[2].uuid);
      const rest = await api.request('GET', `${next.pathname}${next.search}`);
      expect(rest.body.nodes.map((n: { name: string }) => n.name)).toEqual(['n4', 'n5']);
      expect(rest.body.next).toBeUndefined();

      const two = await api.request('GET', '/v1/nodes?limit=2&sort_key=name&sort_dir=desc');
      expect(two.body.nodes.map((n: { name: string }) => n.name)).toEqual(['n5', 'n4']);
      const following = new URL(two.body.next);
      expect(following.searchParams.get('sort_dir')).toBe('desc');
      const after = await api.request('GET', `${following.pathname}${following.search}`);
      expect(after.body.nodes.map((n: { name: string }) => n.name)).toEqual(['n3', 'n2']);

      expect((await api.request('GET', '/v1/nodes?sort_key=driver_info')).status).toBe(400);
      expect((await api.request('GET', '/v1/nodes?sort_dir=up')).status).toBe(400);
      expect((await api.request('GET', '/v1/nodes?marker=not-a-uuid')).status).toBe(400);
      const unknownMarker = await api.request('GET', '/v1/nodes?marker=11111111-2222-4333-8444-555555555555');
      expect(unknownMarker.status).toBe(404);
    });
  });

  describe('PATCH', () => {
    const patch = (ident: string, ops: unknown, query = '') =>
      api.request('PATCH', `/v1/nodes/${ident}${query}`, { body: ops });

    it('adds, replaces and removes nested and top-level values', async () => {
      const node = await createdNode({ name: 'p', driver_info: { ipmi_address: 'a' } });
      let res = await patch(node.uuid, [
        { op: 'add', path: '/properties/x', value: 'y' },
        { op: 'replace', path: '/driver_info/ipmi_address', value: 'b' },
        { op: 'add', path: '/extra/a~1b', value: 1 },
        { op: 'replace', path: '/description', value: 'desc' },
        { op: 'replace', path: '/boot_interface', value: 'ipxe' },
      ]);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({
        properties: { x: 'y' },
        driver_info: { ipmi_address: 'b' },
        extra: { 'a/b': 1 },
        description: 'desc',
        boot_interface: 'ipxe',
      });
      expect(res.body.updated_at).not.toBeNull();
      res = await patch('p', [
        { op: 'remove', path: '/properties/x' },
        { op: 'remove', path: '/description' },
        { op: 'remove', path: '/boot_interface' },
      ]);
      expect(res.body).toMatchObject({ properties: {}, description: null, boot_interface: 'fake' });
      const typed = await api.request('PATCH', '/v1/nodes/p', {
        body: [{ op: 'add', path: '/extra/typed', value: true }],
        headers: { 'Content-Type': 'application/json-patch+json' },
      });
      expect(typed.body.extra).toEqual({ 'a/b': 1, typed: true });
    });

    it.each([
      [[{ op: 'replace', path: '/provision_state', value: 'active' }], 'Cannot patch /provision_state'],
      [[{ op: 'replace', path: '/uuid', value: '11111111-2222-4333-8444-555555555555' }], 'Cannot patch /uuid'],
      [[{ op: 'add', path: '/console_enabled', value: true }], 'Cannot patch /console_enabled'],
      [[{ op: 'add', path: '/boot_mode', value: 'uefi' }], 'Cannot patch /boot_mode'],
      [[{ op: 'move', from: '/extra', path: '/properties' }], 'patch'],
      [[{ op: 'add', path: '/properties' }], "'value' is a required property"],
      [[], 'patch'],
      [{ op: 'add', path: '/extra/x', value: 1 }, 'patch'],
      [[{ op: 'remove', path: '/properties/missing' }], "Couldn't apply patch"],
      [[{ op: 'replace', path: '/extra', value: 'text' }], 'extra'],
      [[{ op: 'replace', path: '/name', value: 'bad name' }], "invalid name 'bad name'"],
      [[{ op: 'replace', path: '/deploy_interface', value: 'ansible' }], 'ansible'],
      [[{ op: 'replace', path: '/driver', value: 'other-hardware' }], 'other-hardware'],
      [[{ op: 'replace', path: '/conductor_group', value: 'nowhere' }], 'nowhere'],
      [[{ op: 'remove', path: '/driver' }], "'driver' is a required property"],
    ])('refuses %j with 400', async (ops, message) => {
      const node = await createdNode();
      const res = await patch(node.uuid, ops);
      expect(res.status).toBe(400);
      expect(faultString(res)).toContain(message);
    });

    it('refuses interface changes outside the allowed states unless in maintenance, and any change mid-transition', async () => {
      const node = await createdNode();
      const id = (await api.stores.nodes.getByUuid(node.uuid))!.id;
      await api.stores.nodes.update(id, { provisionState: 'active' });
      const ops = [{ op: 'replace', path: '/boot_interface', value: 'ipxe' }];
      const busy = await patch(node.uuid, ops);
      expect(busy.status).toBe(409);
      expect(faultString(busy)).toContain("Current state is 'active'");
      expect((await patch(node.uuid, [{ op: 'add', path: '/extra/ok', value: true }])).status).toBe(200);
      await api.stores.nodes.update(id, { maintenance: true });
      expect((await patch(node.uuid, ops)).status).toBe(200);
      await api.stores.nodes.update(id, {
        maintenance: false,
        provisionState: 'deploying',
        targetProvisionState: 'active',
      });
      expect((await patch(node.uuid, [{ op: 'add', path: '/extra/no', value: 1 }])).status).toBe(409);
    });

    it('refuses updates while a conductor holds the lock, and clears the maintenance reason with maintenance', async () => {
      const node = await createdNode();
      const id = (await api.stores.nodes.getByUuid(node.uuid))!.id;
      await api.stores.nodes.update(id, { reservation: 'cond-1' });
      const locked = await patch(node.uuid, [{ op: 'add', path: '/extra/x', value: 1 }]);
      expect(locked.status).toBe(409);
      expect(faultString(locked)).toContain('locked by host cond-1');
      await api.stores.nodes.update(id, { reservation: null, maintenance: true, maintenanceReason: 'broken' });
      const cleared = await patch(node.uuid, [{ op: 'replace', path: '/maintenance', value: false }]);
      expect(cleared.body).toMatchObject({ maintenance: false, maintenance_reason: null });
    });

    it('resets interfaces to the defaults with reset_interfaces only when the driver changes', async () => {
      const node = await createdNode({ boot_interface: 'ipxe' });
      const res = await patch(node.uuid, [{ op: 'replace', path: '/name', value: 'x' }], '?reset_interfaces=true');
      expect(res.status).toBe(400);
    });
  });

  describe('DELETE and maintenance', () => {
    it('deletes a node in enroll with its ports, refuses an active one unless in maintenance', async () => {
      const node = await createdNode();
      const port = await api.request('POST', '/v1/ports', {
        body: { address: '52:54:00:00:00:01', node_uuid: node.uuid },
      });
      expect(port.status).toBe(201);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}/ports`)).body.ports).toHaveLength(1);
      expect((await api.request('DELETE', `/v1/nodes/${node.uuid}`)).status).toBe(204);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}`)).status).toBe(404);
      expect((await api.request('GET', `/v1/ports/${port.body.uuid}`)).status).toBe(404);

      const active = await createdNode({ name: 'busy' });
      const id = (await api.stores.nodes.getByUuid(active.uuid))!.id;
      await api.stores.nodes.update(id, { provisionState: 'active' });
      const refused = await api.request('DELETE', '/v1/nodes/busy');
      expect(refused.status).toBe(409);
      expect(faultString(refused)).toContain('provision state "active"');
      await api.stores.nodes.update(id, { reservation: 'cond-1', maintenance: true });
      expect((await api.request('DELETE', '/v1/nodes/busy')).status).toBe(409);
      await api.stores.nodes.update(id, { reservation: null });
      expect((await api.request('DELETE', '/v1/nodes/busy')).status).toBe(204);
    });

    it('sets maintenance with a reason and clears it', async () => {
      const node = await createdNode({ name: 'm' });
      const set = await api.request('PUT', '/v1/nodes/m/maintenance', { body: { reason: 'disk' } });
      expect(set.status).toBe(202);
      expect((await api.request('GET', `/v1/nodes/${node.uuid}`)).body).toMatchObject({
        maintenance: true,
        maintenance_reason: 'disk',
      });
      expect((await api.request('PUT', '/v1/nodes/m/maintenance', { body: { why: 'x' } })).status).toBe(400);
      expect((await api.request('DELETE', '/v1/nodes/m/maintenance')).status).toBe(202);
      expect((await api.request('GET', '/v1/nodes/m')).body).toMatchObject({
        maintenance: false,
        maintenance_reason: null,
      });
    });
  });
});
