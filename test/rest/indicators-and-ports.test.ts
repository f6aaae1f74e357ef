import { ironicFault } from '@bmaas/api-client';
import { describe, expect, it } from 'vitest';
import { useApiStack } from '../support/api-stack-suite.js';

/**
 * Node indicators (1.63), OVN VTEP link keys (1.90) and ports created on a
 * node named by node_ident (1.94), the way a client at 1.95 drives them:
 * REST calls to the API, the indicators answered by the owning conductor
 * process with the node's management interface, on fake hardware. (The
 * Debian 12 `baremetal` CLI has no indicator commands and sends node_uuid.)
 */

const suite = useApiStack('1.95', {
  conductors: 1,
  env: { BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,noop' },
});

describe('indicators through the API and a conductor', () => {
  it('lists the fake LEDs, sets the system LED blinking and reads it back; refuses a read-only one', async () => {
    const node = await suite.rest.createNode({ driver: 'fake-hardware', name: 'leds' });
    const list = await suite.rest.request<{ indicators: Array<Record<string, unknown>> }>(
      'GET',
      '/v1/nodes/leds/management/indicators',
    );
    expect(list.status, list.text).toBe(200);
    expect(list.body.indicators.map((i) => i.name).sort()).toEqual(['led-0@chassis', 'led-0@disk', 'led@system']);
    expect(list.body.indicators.find((i) => i.name === 'led@system')).toMatchObject({
      component: 'system',
      readonly: false,
      states: ['blinking', 'off', 'on'],
    });
    const led = `/v1/nodes/${node.uuid}/management/indicators/led@system`;
    expect((await suite.rest.request('GET', led)).body).toEqual({ state: 'off' });
    expect((await suite.rest.request('PUT', led, { state: 'BLINKING' })).status).toBe(204);
    expect((await suite.rest.request('GET', led)).body).toEqual({ state: 'blinking' });
    expect((await suite.rest.node(node.uuid)).driver_internal_info).toMatchObject({
      fake_indicators: { system: { led: 'blinking' } },
    });
    const readOnly = await suite.rest.request('PUT', '/v1/nodes/leds/management/indicators/led-0@chassis', {
      state: 'off',
    });
    expect(readOnly.status).toBe(400);
    expect(ironicFault(readOnly).faultstring).toBe('Indicator led-0 of component chassis is read-only.');
    const unknown = await suite.rest.request('GET', '/v1/nodes/leds/management/indicators/led@rack');
    expect(unknown.status).toBe(400);
    expect(ironicFault(unknown).faultstring).toBe('Invalid component rack specified.');
    expect((await suite.rest.node(node.uuid)).reservation).toBeNull();
  }, 60_000);

  it('answers UnsupportedDriverExtension (400) for a management interface without indicators', async () => {
    await suite.rest.createNode({ driver: 'fake-hardware', name: 'leds-noop', management_interface: 'noop' });
    const list = await suite.rest.request('GET', '/v1/nodes/leds-noop/management/indicators');
    expect(list.status).toBe(400);
    expect(ironicFault(list).faultstring).toBe(
      'Driver fake-hardware does not support get_supported_indicators (disabled or not implemented).',
    );
    const set = await suite.rest.request('PUT', '/v1/nodes/leds-noop/management/indicators/led@system', {
      state: 'on',
    });
    expect(set.status).toBe(400);
  }, 60_000);
});

describe('ports at 1.90 and 1.94 through the API', () => {
  it('creates a port on a node named by node_ident carrying an OVN VTEP link', async () => {
    const node = await suite.rest.createNode({ driver: 'fake-hardware', name: 'vtep-node' });
    const link = { port_id: 'p1', 'vtep-logical-switch': 'ls1', 'vtep-physical-switch': 'ps1' };
    const created = await suite.rest.request<Record<string, unknown>>('POST', '/v1/ports', {
      address: '52:54:00:12:34:56',
      node_ident: 'vtep-node',
      local_link_connection: link,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ node_uuid: node.uuid, local_link_connection: link });
    const old = await suite.at('1.93').request('POST', '/v1/ports', {
      address: '52:54:00:12:34:57',
      node_ident: 'vtep-node',
    });
    expect(old.status).toBe(406);
    const shownOld = await suite.at('1.89').request<Record<string, unknown>>('GET', `/v1/ports/${created.body.uuid}`);
    expect(shownOld.body.local_link_connection).toEqual({});
  }, 60_000);
});
