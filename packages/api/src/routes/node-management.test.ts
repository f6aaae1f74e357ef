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

  describe('indicators (1.63)', () => {
    const base = '/v1/nodes/mg/management/indicators';

    it('lists every indicator as <id>@<component> with readonly, states and links on the node as named', async () => {
      api.conductors.respondWith('get_supported_indicators', () => ({
        chassis: { 'led-0': { readonly: true, states: ['off', 'on'] } },
        system: { led: { readonly: false, states: ['blinking', 'off', 'on'] } },
      }));
      const res = await api.request('GET', base, { version: '1.63' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        indicators: [
          {
            name: 'led-0@chassis',
            component: 'chassis',
            readonly: true,
            states: ['off', 'on'],
            links: [
              { href: `${api.baseUrl}/v1/nodes/mg/management/indicators/led-0@chassis`, rel: 'self' },
              { href: `${api.baseUrl}/nodes/mg/management/indicators/led-0@chassis`, rel: 'bookmark' },
            ],
          },
          expect.objectContaining({ name: 'led@system', component: 'system', readonly: false }),
        ],
      });
      expect(api.conductors.callsOf('get_supported_indicators').map((c) => c.params)).toEqual([{ node_id: uuid }]);
    });

    it('reads one indicator, split at its first @', async () => {
      api.conductors.respondWith('get_indicator_state', () => 'blinking');
      const res = await api.request('GET', `${base}/led@system`, { version: '1.63' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ state: 'blinking' });
      await api.request('GET', `/v1/nodes/${uuid}/management/indicators/a%40b@disk`, { version: '1.63' });
      expect(api.conductors.callsOf('get_indicator_state').map((c) => c.params)).toEqual([
        { node_id: uuid, component: 'system', indicator: 'led' },
        { node_id: uuid, component: 'b@disk', indicator: 'a' },
      ]);
    });

    it('sets an indicator (any case of the state, sent as Ironic names it) and answers 204', async () => {
      for (const state of ['BLINKING', 'off']) {
        const res = await api.request('PUT', `${base}/led@system`, { body: { state }, version: '1.63' });
        expect(res.status).toBe(204);
      }
      expect(api.conductors.callsOf('set_indicator_state').map((c) => c.params)).toEqual([
        { node_id: uuid, component: 'system', indicator: 'led', state: 'blinking' },
        { node_id: uuid, component: 'system', indicator: 'led', state: 'off' },
      ]);
    });

    it.each([
      ['a name without @', 'GET', `${base}/led`, undefined, 'Malformed indicator name "led"'],
      ['a name without @', 'PUT', `${base}/led`, { state: 'on' }, 'Malformed indicator name "led"'],
      ['no state', 'PUT', `${base}/led@system`, {}, "'state' is a required property"],
      ['an unknown state', 'PUT', `${base}/led@system`, { state: 'dim' }, 'Invalid indicator state dim'],
      ['another field', 'PUT', `${base}/led@system`, { state: 'on', colour: 'red' }, "'colour' was unexpected"],
    ])('refuses %s (%s) with 400 without calling a conductor', async (_what, method, path, body, message) => {
      const res = await api.request(method, path, { body, version: '1.63' });
      expect(res.status).toBe(400);
      expect(faultOf(res.body).faultstring).toContain(message);
      expect(api.conductors.calls).toEqual([]);
    });

    it('maps a management interface without indicators to 400 and an unknown node to 404', async () => {
      api.conductors.failWith(
        'get_supported_indicators',
        new UnsupportedDriverExtension('fake-hardware', 'get_supported_indicators'),
      );
      const unsupported = await api.request('GET', base, { version: '1.63' });
      expect(unsupported.status).toBe(400);
      expect(faultOf(unsupported.body).faultstring).toBe(
        'Driver fake-hardware does not support get_supported_indicators (disabled or not implemented).',
      );
      expect((await api.request('GET', '/v1/nodes/nobody/management/indicators', { version: '1.63' })).status).toBe(
        404,
      );
    });

    it('answers below 1.63 too, as Ironic does (its indicator endpoints check no version)', async () => {
      api.conductors.respondWith('get_indicator_state', () => 'on');
      for (const version of [null, '1.1', '1.62']) {
        const res = await api.request('GET', `/v1/nodes/${uuid}/management/indicators/led@system`, { version });
        expect(res.status, String(version)).toBe(200);
      }
    });

    it('answers 405 to other methods', async () => {
      expect((await api.request('PUT', base, { body: {} })).status).toBe(405);
      expect((await api.request('POST', `${base}/led@system`, { body: {} })).status).toBe(405);
    });
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
