import { IPMIFailure, UnsupportedDriverExtension } from '@bmaas/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from '../testing/api-harness.js';

describe('/v1/nodes/{id}/management through the conductor client', () => {
  let api: ApiHarness;
  let uuid: string;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    uuid = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'mg' } })).body.uuid;
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(() => {
    api.conductors.calls.length = 0;
    api.conductors.clearFailures();
  });

  it('sets the boot device (persistent false unless asked) and answers 204', async () => {
    const res = await api.request('PUT', '/v1/nodes/mg/management/boot_device', { body: { boot_device: 'pxe' } });
    expect(res.status).toBe(204);
    await api.request('PUT', `/v1/nodes/${uuid}/management/boot_device`, {
      body: { boot_device: 'disk', persistent: true },
    });
    expect(api.conductors.callsOf('set_boot_device').map((c) => c.params)).toEqual([
      { node_id: uuid, device: 'pxe', persistent: false },
      { node_id: uuid, device: 'disk', persistent: true },
    ]);
  });

  it('refuses a malformed body without calling a conductor', async () => {
    for (const body of [{}, { boot_device: 'pxe', persistent: 'yes' }, { boot_device: 'pxe', extra: 1 }]) {
      const res = await api.request('PUT', '/v1/nodes/mg/management/boot_device', { body });
      expect(res.status).toBe(400);
    }
    expect(api.conductors.calls).toEqual([]);
  });

  it('reads the boot device and the supported ones from the conductor', async () => {
    api.conductors.respondWith('get_boot_device', () => ({ boot_device: 'pxe', persistent: false }));
    api.conductors.respondWith('get_supported_boot_devices', () => ['pxe', 'disk']);
    const current = await api.request('GET', '/v1/nodes/mg/management/boot_device');
    expect(current.status).toBe(200);
    expect(current.body).toEqual({ boot_device: 'pxe', persistent: false });
    const supported = await api.request('GET', '/v1/nodes/mg/management/boot_device/supported');
    expect(supported.body).toEqual({ supported_boot_devices: ['pxe', 'disk'] });
  });

  it('injects an NMI from 1.29 on, and maps conductor errors to their status', async () => {
    expect((await api.request('PUT', '/v1/nodes/mg/management/inject_nmi', { body: {}, version: '1.28' })).status).toBe(
      406,
    );
    expect((await api.request('PUT', '/v1/nodes/mg/management/inject_nmi', { body: {}, version: '1.29' })).status).toBe(
      204,
    );
    expect(api.conductors.callsOf('inject_nmi').map((c) => c.params)).toEqual([{ node_id: uuid }]);
    api.conductors.failWith('inject_nmi', new UnsupportedDriverExtension('manual-management', 'inject_nmi'));
    const unsupported = await api.request('PUT', '/v1/nodes/mg/management/inject_nmi', { body: {}, version: '1.29' });
    expect(unsupported.status).toBe(400);
    api.conductors.failWith('set_boot_device', new IPMIFailure('IPMI command "chassis bootdev pxe" to BMC x failed'));
    const failed = await api.request('PUT', '/v1/nodes/mg/management/boot_device', { body: { boot_device: 'pxe' } });
    expect(failed.status).toBe(500);
    expect(faultOf(failed.body).faultstring).toContain('to BMC x failed');
  });

  it('answers 405 to other methods', async () => {
    expect((await api.request('POST', '/v1/nodes/mg/management/boot_device', { body: {} })).status).toBe(405);
    expect((await api.request('PUT', '/v1/nodes/mg/management/boot_device/supported', { body: {} })).status).toBe(405);
  });
});

describe('power timeout', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'pt' } });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('passes a power timeout (1.27) to the conductor and refuses a bad one', async () => {
    const put = (body: unknown, version = '1.27') => api.request('PUT', '/v1/nodes/pt/states/power', { body, version });
    expect((await put({ target: 'power on', timeout: 30 })).status).toBe(202);
    expect((await put({ target: 'power on', timeout: 0 })).status).toBe(400);
    expect((await put({ target: 'power on', timeout: 30 }, '1.26')).status).toBe(406);
    expect(api.conductors.callsOf('change_node_power_state').map((c) => c.params)).toEqual([
      { node_id: expect.any(String), new_state: 'power on', timeout: 30 },
    ]);
  });
});
