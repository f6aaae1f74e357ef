import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

/** Node fields and provisioning requests of 1.104-1.110, each below and at its version. */
describe('nodes from 1.104', () => {
  let api: ApiHarness;
  let uuid: string;
  let id: number;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    uuid = await api.createNode({ name: 'n104' });
    id = (await api.stores.nodes.getByUuid(uuid))?.id as number;
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    api.conductors.calls.length = 0;
    await api.stores.nodes.update(id, {
      provisionState: 'enroll',
      targetProvisionState: null,
      instanceName: null,
      instanceInfo: {},
      health: null,
    });
  });
  const patch = (ops: unknown[], version: string) => api.request('PATCH', `/v1/nodes/${uuid}`, { body: ops, version });

  it('instance_name: written, shown and filtered from 1.104, 1-255 characters', async () => {
    const set = [{ op: 'replace', path: '/instance_name', value: 'web-1' }];
    expect((await patch(set, '1.103')).status).toBe(406);
    const res = await patch(set, '1.104');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.instance_name).toBe('web-1');
    expect((await api.request('GET', `/v1/nodes/${uuid}`, { version: '1.103' })).body).not.toHaveProperty(
      'instance_name',
    );
    expect((await api.request('GET', '/v1/nodes?instance_name=web-1', { version: '1.103' })).status).toBe(406);
    const found = await api.request('GET', '/v1/nodes?instance_name=web-1', { version: '1.104' });
    expect(found.body.nodes.map((n: { uuid: string }) => n.uuid)).toEqual([uuid]);
    expect((await api.request('GET', '/v1/nodes?instance_name=web-2', { version: '1.104' })).body.nodes).toEqual([]);
    const empty = await patch([{ op: 'replace', path: '/instance_name', value: '' }], '1.104');
    expect(empty.status).toBe(400);
    expect(faultString(empty)).toContain('instance_name');
  });

  it('an unnamed instance takes instance_info.display_name as its name; a named one keeps it', async () => {
    const display = [{ op: 'add', path: '/instance_info/display_name', value: 'from-nova' }];
    expect((await patch(display, '1.104')).body.instance_name).toBe('from-nova');
    await patch([{ op: 'replace', path: '/instance_name', value: 'mine' }], '1.104');
    const again = await patch([{ op: 'add', path: '/instance_info/display_name', value: 'other' }], '1.104');
    expect(again.body.instance_name).toBe('mine');
  });

  it('health: null until the BMC is read, shown from 1.109, not writable', async () => {
    const shown = async (version: string) => (await api.request('GET', `/v1/nodes/${uuid}`, { version })).body;
    expect(await shown('1.108')).not.toHaveProperty('health');
    expect((await shown('1.109')).health).toBeNull();
    expect(await api.stores.nodes.recordHealth(id, 'Warning')).toBe(true);
    expect(await api.stores.nodes.recordHealth(id, 'Warning')).toBe(false);
    expect((await shown('1.109')).health).toBe('Warning');
    expect((await api.request('GET', '/v1/nodes?fields=uuid,health', { version: '1.108' })).status).toBe(406);
    expect((await api.request('GET', '/v1/nodes?fields=uuid,health', { version: '1.109' })).body.nodes[0]).toEqual({
      uuid,
      health: 'Warning',
      links: expect.any(Array),
    });
    expect((await patch([{ op: 'replace', path: '/health', value: 'OK' }], '1.109')).status).toBe(400);
  });

  it('disable_ramdisk with service from 1.108', async () => {
    await api.stores.nodes.update(id, { provisionState: 'active' });
    const body = { target: 'service', service_steps: [{ interface: 'power', step: 'reboot' }], disable_ramdisk: true };
    const put = (version: string) => api.request('PUT', `/v1/nodes/${uuid}/states/provision`, { body, version });
    const below = await put('1.107');
    expect(below.status).toBe(406);
    expect(faultString(below)).toContain('disable_ramdisk is not acceptable');
    expect((await put('1.108')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'service', service_steps: body.service_steps, disable_ramdisk: true },
    ]);
  });

  it('abort in wait call-back from 1.110', async () => {
    await api.stores.nodes.update(id, { provisionState: 'wait call-back', targetProvisionState: 'active' });
    const put = (version: string) =>
      api.request('PUT', `/v1/nodes/${uuid}/states/provision`, { body: { target: 'abort' }, version });
    expect((await put('1.109')).status).toBe(406);
    expect((await put('1.110')).status).toBe(202);
    expect(api.conductors.callsOf('do_provisioning_action').map((c) => c.params)).toEqual([
      { node_id: uuid, event: 'abort' },
    ]);
  });

  it('answers the request id in x-openstack-request-id and openstack-request-id, at every version', async () => {
    for (const version of ['1.1', '1.107']) {
      const res = await api.request('GET', `/v1/nodes/${uuid}`, { version });
      const id = res.headers.get('x-openstack-request-id');
      expect(id).toMatch(/^req-[0-9a-f-]{36}$/);
      expect(res.headers.get('openstack-request-id')).toBe(id);
    }
  });
});
