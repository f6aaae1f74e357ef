import { InvalidStateRequested, NodeLocked } from '@bmaas/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf, faultString } from '../testing/api-harness.js';

describe('/v1/nodes/{id}/states through the conductor client', () => {
  let api: ApiHarness;
  let uuid: string;
  let id: number;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    uuid = await api.createNode({ name: 'st' });
    id = (await api.stores.nodes.getByUuid(uuid))!.id;
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    api.conductors.calls.length = 0;
    api.conductors.clearFailures();
    await api.stores.nodes.update(id, {
      provisionState: 'enroll',
      targetProvisionState: null,
      maintenance: false,
      reservation: null,
    });
  });

  const provision = (body: unknown, version?: string) =>
    api.request('PUT', '/v1/nodes/st/states/provision', { body, ...(version ? { version } : {}) });
  const power = (body: unknown, version?: string) =>
    api.request('PUT', `/v1/nodes/${uuid}/states/power`, { body, ...(version ? { version } : {}) });

  it('shows both states, with the fields of the request version', async () => {
    const res = await api.request('GET', '/v1/nodes/st/states');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      console_enabled: false,
      last_error: null,
      power_state: null,
      provision_state: 'enroll',
      target_power_state: null,
      target_provision_state: null,
      provision_updated_at: null,
      raid_config: {},
      target_raid_config: {},
      boot_mode: null,
      secure_boot: null,
    });
    const old = await api.request('GET', `/v1/nodes/${uuid}/states`, { version: '1.11' });
    expect(Object.keys(old.body)).not.toContain('raid_config');
  });

  it('asks the owning conductor for a provision action and answers 202 with Location', async () => {
    const res = await provision({ target: 'manage' });
    expect(res.status).toBe(202);
    expect(res.body).toBeUndefined();
    expect(res.headers.get('location')).toBe(`${api.baseUrl}/v1/nodes/st/states`);
    expect(api.conductors.calls).toEqual([
      {
        host: 'cond-1',
        method: 'do_provisioning_action',
        params: { node_id: uuid, event: 'manage' },
        options: { requestId: res.headers.get('openstack-request-id') },
      },
    ]);
  });

  it('maps targets to events and passes clean steps and rescue passwords on', async () => {
    await api.stores.nodes.update(id, { provisionState: 'available' });
    expect((await provision({ target: 'active' })).status).toBe(202);
    await api.stores.nodes.update(id, { provisionState: 'manageable' });
    const steps = [{ interface: 'deploy', step: 'erase_devices' }];
    expect((await provision({ target: 'clean', clean_steps: steps })).status).toBe(202);
    await api.stores.nodes.update(id, { provisionState: 'active' });
    expect((await provision({ target: 'rescue', rescue_password: 'pw' })).status).toBe(202);
    expect((await provision({ target: 'deleted' })).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'deploy' },
      { node_id: uuid, event: 'clean', clean_steps: steps },
      { node_id: uuid, event: 'rescue', rescue_password: 'pw' },
      { node_id: uuid, event: 'delete' },
    ]);
  });

  it.each([
    [{ target: 'explode' }, 400, 'could not be understood'],
    [{ target: 'provide' }, 400, 'while it is in state "enroll"'],
    [
      { target: 'manage', configdrive: 'x' },
      400,
      'only valid when setting target provision state to active or rebuild',
    ],
    [{ target: 'manage', configdrive: { user_data: 'x', extra: 1 } }, 400, "('extra' was unexpected)"],
    [{}, 400, "'target' is a required property"],
    [{ target: 'manage', clean_steps: [{ step: 'x' }] }, 400, 'only valid'],
    [{ target: 'manage', rescue_password: 'x' }, 400, 'only valid'],
    [{ target: 'unhold' }, 406, 'minimal required API version'],
    [{ target: 'service', service_steps: [{ interface: 'deploy', step: 'x' }] }, 406, 'version should be 1.87'],
  ])('refuses %j without calling the conductor', async (body, status, message) => {
    const res = await provision(body);
    expect(res.status).toBe(status);
    expect(faultString(res)).toContain(message);
    expect(api.conductors.calls).toEqual([]);
  });

  it('passes a config drive with active or rebuild, in the forms the version knows', async () => {
    await api.stores.nodes.update(id, { provisionState: 'available' });
    const drive = { meta_data: { hostname: 'h' }, user_data: ['x'], network_data: { links: [] } };
    expect((await provision({ target: 'active', configdrive: drive }, '1.56')).status).toBe(202);
    expect(api.conductors.calls.at(-1)?.params).toMatchObject({ event: 'deploy', configdrive: drive });
    expect((await provision({ target: 'active', configdrive: drive }, '1.55')).status).toBe(406);
    expect((await provision({ target: 'active', configdrive: { vendor_data: {} } }, '1.58')).status).toBe(406);
    expect((await provision({ target: 'active', configdrive: 'H4sI+/=' })).status).toBe(202);
    expect(api.conductors.calls.at(-1)?.params).toMatchObject({ configdrive: 'H4sI+/=' });
    expect((await provision({ target: 'active', configdrive: 'http://cd.example/x.iso.gz' })).status).toBe(202);
    const bad = await provision({ target: 'active', configdrive: 'not base64!' });
    expect(bad.status).toBe(400);
    expect(faultString(bad)).toContain('base64 of a gzipped ISO 9660 image');
    await api.stores.nodes.update(id, { provisionState: 'active' });
    expect((await provision({ target: 'rebuild', configdrive: 'H4sI' }, '1.34')).status).toBe(406);
    expect((await provision({ target: 'rebuild', configdrive: 'H4sI' }, '1.35')).status).toBe(202);
  });

  it("answers GET /v1/nodes/{id}/validate with the conductor's per-interface results", async () => {
    const results = { boot: { result: true }, deploy: { result: false, reason: 'image_source is required' } };
    api.conductors.respondWith('validate_driver_interfaces', async () => results);
    const res = await api.request('GET', '/v1/nodes/st/validate');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(results);
    expect(api.conductors.calls.at(-1)).toMatchObject({
      method: 'validate_driver_interfaces',
      params: { node_id: uuid },
    });
  });

  it('passes service steps on for the service verb (1.87) of an active node', async () => {
    await api.stores.nodes.update(id, { provisionState: 'active' });
    const steps = [
      { interface: 'deploy', step: 'update_firmware', args: { force: true }, order: 1 },
      { interface: 'power', step: 'reboot' },
    ];
    expect((await provision({ target: 'service', service_steps: steps }, '1.87')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'service', service_steps: steps },
    ]);
  });

  it.each([
    [{ target: 'service' }, 400, '"service_steps" is required when setting target provision state to service'],
    [{ target: 'service', service_steps: [] }, 400, '"service_steps" is required'],
    [{ target: 'service', service_steps: [{ interface: 'deploy' }] }, 400, "'step' is a required property"],
    [{ target: 'service', service_steps: [{ interface: 'network', step: 'x' }] }, 400, 'is not one of'],
    [{ target: 'service', service_steps: [{ interface: 'deploy', step: '' }] }, 400, 'should be non-empty'],
    [{ target: 'service', service_steps: [{ interface: 'deploy', step: 'x', priority: 1 }] }, 400, 'unexpected'],
    [
      { target: 'rescue', rescue_password: 'pw', service_steps: [{ interface: 'deploy', step: 'x' }] },
      400,
      'only valid',
    ],
  ])('refuses the service request %j without calling the conductor', async (body, status, message) => {
    await api.stores.nodes.update(id, { provisionState: 'active' });
    const res = await provision(body, '1.87');
    expect(res.status).toBe(status);
    expect(faultString(res)).toContain(message);
    expect(api.conductors.calls).toEqual([]);
  });

  it('passes deploy steps (1.69) on with active and rebuild', async () => {
    await api.stores.nodes.update(id, { provisionState: 'available' });
    const steps = [
      { interface: 'deploy', step: 'write_marker', args: { path: '/x' }, priority: 90 },
      { interface: 'bios', step: 'apply_configuration', args: {}, priority: '0' },
    ];
    expect((await provision({ target: 'active', deploy_steps: steps }, '1.69')).status).toBe(202);
    await api.stores.nodes.update(id, { provisionState: 'active' });
    expect((await provision({ target: 'rebuild', deploy_steps: steps }, '1.69')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'deploy', deploy_steps: steps },
      { node_id: uuid, event: 'rebuild', deploy_steps: steps },
    ]);
  });

  it('passes disable_ramdisk (1.70) on with a manual clean', async () => {
    await api.stores.nodes.update(id, { provisionState: 'manageable' });
    const steps = [{ interface: 'management', step: 'clear_job_queue' }];
    expect((await provision({ target: 'clean', clean_steps: steps, disable_ramdisk: true }, '1.70')).status).toBe(202);
    expect((await provision({ target: 'clean', clean_steps: steps, disable_ramdisk: false }, '1.70')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'clean', clean_steps: steps, disable_ramdisk: true },
      { node_id: uuid, event: 'clean', clean_steps: steps },
    ]);
  });

  const deployStep = { interface: 'deploy', step: 'write_marker', args: {}, priority: 10 };
  it.each([
    ['available', { target: 'active', deploy_steps: [deployStep] }, '1.68', 406, 'version should be 1.69'],
    ['manageable', { target: 'provide', deploy_steps: [deployStep] }, '1.69', 400, 'active or rebuild'],
    [
      'available',
      { target: 'active', deploy_steps: [{ interface: 'deploy', step: 'x', args: {} }] },
      '1.69',
      400,
      "'priority' is a required property",
    ],
    [
      'available',
      { target: 'active', deploy_steps: [{ ...deployStep, args: undefined }] },
      '1.69',
      400,
      "'args' is a required property",
    ],
    ['available', { target: 'active', deploy_steps: [{ ...deployStep, priority: -1 }] }, '1.69', 400, 'deploy_steps'],
    [
      'available',
      { target: 'active', deploy_steps: [{ ...deployStep, priority: 'high' }] },
      '1.69',
      400,
      'deploy_steps',
    ],
    [
      'available',
      { target: 'active', deploy_steps: [{ ...deployStep, interface: 'network' }] },
      '1.69',
      400,
      'is not one of',
    ],
    ['available', { target: 'active', deploy_steps: [{ ...deployStep, order: 1 }] }, '1.69', 400, 'unexpected'],
    ['available', { target: 'active', deploy_steps: 'x' }, '1.69', 400, 'deploy_steps'],
    [
      'manageable',
      { target: 'clean', clean_steps: [{ step: 'x' }], disable_ramdisk: true },
      '1.69',
      406,
      'disable_ramdisk is not acceptable in this API version',
    ],
    [
      'active',
      { target: 'service', service_steps: [{ interface: 'deploy', step: 'x' }], disable_ramdisk: true },
      '1.95',
      406,
      'disable_ramdisk is not acceptable',
    ],
    [
      'manageable',
      { target: 'provide', disable_ramdisk: true },
      '1.70',
      400,
      'disable_ramdisk is supported only with manual cleaning or servicing',
    ],
    [
      'manageable',
      { target: 'clean', clean_steps: [{ step: 'x' }], disable_ramdisk: 'yes' },
      '1.70',
      400,
      'disable_ramdisk',
    ],
  ])(
    'refuses from %s the request %j at %s without calling the conductor',
    async (state, body, version, status, message) => {
      await api.stores.nodes.update(id, { provisionState: state });
      const res = await provision(body, version);
      expect(res.status).toBe(status);
      expect(faultString(res)).toContain(message);
      expect(api.conductors.calls).toEqual([]);
    },
  );

  it('gates service (1.87) and unhold (1.85) by version and by state', async () => {
    await api.stores.nodes.update(id, { provisionState: 'active' });
    const steps = [{ interface: 'deploy', step: 'x' }];
    expect((await provision({ target: 'service', service_steps: steps }, '1.86')).status).toBe(406);
    await api.stores.nodes.update(id, { provisionState: 'manageable' });
    const wrongState = await provision({ target: 'service', service_steps: steps }, '1.87');
    expect(wrongState.status).toBe(400);
    expect(faultString(wrongState)).toContain('while it is in state "manageable"');
    await api.stores.nodes.update(id, { provisionState: 'service hold' });
    expect((await provision({ target: 'unhold' }, '1.84')).status).toBe(406);
    expect((await provision({ target: 'unhold' }, '1.85')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'unhold' },
    ]);
  });

  it('shows the service step (1.87) the conductor keeps, {} when none', async () => {
    const step = { interface: 'deploy', step: 'hold' };
    await api.stores.nodes.update(id, { provisionState: 'service hold', driverInternalInfo: { service_step: step } });
    expect((await api.request('GET', '/v1/nodes/st', { version: '1.87' })).body.service_step).toEqual(step);
    expect((await api.request('GET', '/v1/nodes/st', { version: '1.86' })).body).not.toHaveProperty('service_step');
    expect((await api.request('GET', '/v1/nodes/st?fields=service_step', { version: '1.86' })).status).toBe(406);
    await api.stores.nodes.update(id, { driverInternalInfo: {} });
    expect((await api.request('GET', '/v1/nodes/st?fields=service_step', { version: '1.87' })).body).toMatchObject({
      service_step: {},
    });
  });

  it('checks the preconditions Ironic checks in the API', async () => {
    await api.stores.nodes.update(id, { provisionState: 'manageable' });
    expect(faultString(await provision({ target: 'clean' }))).toContain('"clean_steps" is required');
    await api.stores.nodes.update(id, { provisionState: 'active' });
    expect(faultString(await provision({ target: 'rescue', rescue_password: ' ' }))).toContain('rescue_password');
    await api.stores.nodes.update(id, { provisionState: 'available', maintenance: true });
    const blocked = await provision({ target: 'active' });
    expect(blocked.status).toBe(400);
    expect(faultString(blocked)).toContain('maintenance mode');
    await api.stores.nodes.update(id, { provisionState: 'enroll', maintenance: false });
    expect((await provision({ target: 'deploy' }, '1.72')).status).toBe(406);
    const manageAt13 = await api.request('PUT', `/v1/nodes/${uuid}/states/provision`, {
      body: { target: 'manage' },
      version: '1.3',
    });
    expect(manageAt13.status).toBe(406);
    expect((await provision({ target: 'manage' }, '1.4')).status).toBe(404);
    await api.stores.nodes.update(id, { provisionState: 'deploying', reservation: 'cond-1' });
    const busy = await provision({ target: 'manage' });
    expect(busy.status).toBe(409);
    expect(faultString(busy)).toContain('locked by host cond-1');
    expect(api.conductors.calls).toEqual([]);
  });

  it('answers what the conductor throws: NodeLocked 409, InvalidStateRequested 400, anything else 500', async () => {
    api.conductors.failWith('do_provisioning_action', new NodeLocked(uuid, 'cond-1'));
    expect((await provision({ target: 'manage' })).status).toBe(409);
    api.conductors.failWith('do_provisioning_action', new InvalidStateRequested('not now'));
    const refused = await provision({ target: 'manage' });
    expect(refused.status).toBe(400);
    expect(faultString(refused)).toBe('not now');
    api.conductors.failWith('do_provisioning_action', new Error('socket hang up at 10.0.0.1'));
    const broken = await provision({ target: 'manage' });
    expect(broken.status).toBe(500);
    expect(faultOf(broken.body).faultcode).toBe('Server');
    expect(faultString(broken)).not.toContain('10.0.0.1');
  });

  it('answers 503 when no conductor is alive', async () => {
    await api.stores.conductors.markOffline('cond-1');
    try {
      const res = await provision({ target: 'manage' });
      expect(res.status).toBe(503);
    } finally {
      await api.registerConductor('cond-1');
    }
  });

  it('changes the power state through the conductor', async () => {
    const res = await power({ target: 'power on' });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`${api.baseUrl}/v1/nodes/${uuid}/states`);
    expect(api.conductors.callsOf('change_node_power_state').map((c) => c.params)).toEqual([
      { node_id: uuid, new_state: 'power on' },
    ]);
    expect((await power({ target: 'soft power off' }, '1.26')).status).toBe(406);
    expect((await power({ target: 'sleep' })).status).toBe(400);
    expect((await power({ target: 'power on', timeout: 'soon' })).status).toBe(400);
    await api.stores.nodes.update(id, { provisionState: 'clean wait' });
    expect((await power({ target: 'power off' })).status).toBe(400);
    expect(api.conductors.calls).toHaveLength(1);
  });

  it('answers 404 for an unknown node and 405 for other methods', async () => {
    expect((await api.request('PUT', '/v1/nodes/ghost/states/provision', { body: { target: 'manage' } })).status).toBe(
      404,
    );
    const res = await api.request('GET', '/v1/nodes/st/states/provision');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('PUT');
  });
});
