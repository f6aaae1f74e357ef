import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from '../testing/api-harness.js';
import { MAX_MINOR, Minor } from '../versions.js';

describe('/v1/conductors and /v1/drivers', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { max_limit: 2 } } });
    await api.registerConductor('cond-a');
    await api.registerConductor('cond-b', 'rack-a');
    await api.registerConductor('cond-gone');
    await api.stores.conductors.markOffline('cond-gone');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('lists conductors with aliveness, pages by hostname, and shows details on request', async () => {
    const res = await api.request('GET', '/v1/conductors?sort_key=hostname');
    expect(res.status).toBe(200);
    expect(res.body.conductors).toEqual([
      {
        hostname: 'cond-a',
        conductor_group: '',
        alive: true,
        links: [
          { href: `${api.baseUrl}/v1/conductors/cond-a`, rel: 'self' },
          { href: `${api.baseUrl}/conductors/cond-a`, rel: 'bookmark' },
        ],
      },
      expect.objectContaining({ hostname: 'cond-b', conductor_group: 'rack-a', alive: true }),
    ]);
    const next = new URL(res.body.next);
    expect(next.searchParams.get('marker')).toBe('cond-b');
    const rest = await api.request('GET', `${next.pathname}${next.search}`);
    expect(rest.body.conductors).toEqual([expect.objectContaining({ hostname: 'cond-gone', alive: false })]);

    const detail = await api.request('GET', '/v1/conductors?detail=true&sort_key=hostname&limit=1');
    expect(Object.keys(detail.body.conductors[0]).sort()).toEqual(
      ['alive', 'conductor_group', 'created_at', 'drivers', 'hostname', 'links', 'updated_at'].sort(),
    );
    expect(detail.body.conductors[0].drivers).toEqual(['fake-hardware']);
    expect((await api.request('GET', '/v1/conductors?sort_key=alive')).status).toBe(400);
    expect((await api.request('GET', '/v1/conductors?marker=nobody')).status).toBe(404);
    expect((await api.request('GET', '/v1/conductors?fields=hostname,bogus')).status).toBe(400);
  });

  it('shows one conductor and hides the endpoint before 1.49', async () => {
    const one = await api.request('GET', '/v1/conductors/cond-b');
    expect(one.body).toMatchObject({ hostname: 'cond-b', alive: true, drivers: ['fake-hardware'] });
    const missing = await api.request('GET', '/v1/conductors/nobody');
    expect(missing.status).toBe(404);
    expect(faultOf(missing.body).faultstring).toBe('Conductor nobody could not be found.');
    expect((await api.request('GET', '/v1/conductors', { version: '1.48' })).status).toBe(404);
  });

  it('lists hardware types of alive conductors with their hosts', async () => {
    const res = await api.request('GET', '/v1/drivers?detail=False');
    expect(res.body.drivers).toEqual([
      {
        name: 'fake-hardware',
        hosts: ['cond-a', 'cond-b'],
        type: 'dynamic',
        links: [
          { href: `${api.baseUrl}/v1/drivers/fake-hardware`, rel: 'self' },
          { href: `${api.baseUrl}/drivers/fake-hardware`, rel: 'bookmark' },
        ],
        properties: [
          { href: `${api.baseUrl}/v1/drivers/fake-hardware/properties`, rel: 'self' },
          { href: `${api.baseUrl}/drivers/fake-hardware/properties`, rel: 'bookmark' },
        ],
      },
    ]);
    expect((await api.request('GET', '/v1/drivers?type=classic')).body.drivers).toEqual([]);
    expect((await api.request('GET', '/v1/drivers?type=weird')).status).toBe(400);
    expect((await api.request('GET', '/v1/drivers?detail=true', { version: '1.29' })).status).toBe(406);
    expect((await api.request('GET', '/v1/drivers?fields=name', { version: '1.76' })).status).toBe(406);
    expect((await api.request('GET', '/v1/drivers?fields=name,hosts')).body.drivers).toEqual([
      { name: 'fake-hardware', hosts: ['cond-a', 'cond-b'], links: expect.any(Array) },
    ]);
  });

  it('shows the interfaces of one hardware type and 404 for an unknown one', async () => {
    const res = await api.request('GET', '/v1/drivers/fake-hardware');
    expect(res.body).toMatchObject({
      name: 'fake-hardware',
      default_boot_interface: 'fake',
      enabled_boot_interfaces: ['fake', 'ipxe'],
      default_deploy_interface: 'fake',
      enabled_deploy_interfaces: ['direct', 'fake'],
      default_power_interface: 'fake',
      default_bios_interface: 'no-bios',
      enabled_bios_interfaces: ['fake', 'no-bios'],
      default_network_interface: 'noop',
      enabled_network_interfaces: ['noop'],
      default_raid_interface: 'no-raid',
      enabled_raid_interfaces: ['fake', 'no-raid'],
    });
    expect(res.body).not.toHaveProperty('default_firmware_interface');
    const withFirmware = await api.request('GET', '/v1/drivers/fake-hardware', {
      version: `1.${Minor.FIRMWARE_INTERFACE}`,
    });
    if (MAX_MINOR < Minor.FIRMWARE_INTERFACE) expect(withFirmware.status).toBe(406);
    else {
      expect(withFirmware.body).toMatchObject({
        default_firmware_interface: 'no-firmware',
        enabled_firmware_interfaces: ['fake', 'no-firmware'],
      });
    }
    const detailList = await api.request('GET', '/v1/drivers?detail=true');
    expect(detailList.body.drivers[0]).toEqual(res.body);
    const missing = await api.request('GET', '/v1/drivers/ipmi');
    expect(missing.status).toBe(404);
    expect(faultOf(missing.body).faultstring).toContain('ipmi');
  });
});
