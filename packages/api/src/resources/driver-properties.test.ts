import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from '../testing/api-harness.js';

describe('GET /v1/drivers/{name}/properties', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-a', 'rack-1');
    api.conductors.respondWith('get_driver_properties', async ({ driver_name }) => ({
      qemu_qmp_socket: `socket of ${driver_name}`,
    }));
  });
  afterAll(async () => {
    await api?.close();
  });

  it('asks an alive conductor that has the hardware type, in its group', async () => {
    const res = await api.request('GET', '/v1/drivers/fake-hardware/properties', { version: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ qemu_qmp_socket: 'socket of fake-hardware' });
    const [call] = api.conductors.callsOf('get_driver_properties');
    expect(call).toMatchObject({ host: 'cond-a', params: { driver_name: 'fake-hardware' } });
  });

  it('answers 404 for a hardware type no alive conductor has, 405 for other methods', async () => {
    const res = await api.request('GET', '/v1/drivers/ipmi/properties');
    expect(res.status).toBe(404);
    expect(faultOf(res.body).faultstring).toBe('Could not find the following driver(s) or hardware type(s): ipmi.');
    expect((await api.request('POST', '/v1/drivers/fake-hardware/properties', { body: {} })).status).toBe(405);
  });
});
