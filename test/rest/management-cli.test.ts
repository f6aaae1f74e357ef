import { ApiClient } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAREMETAL, baremetal } from '../support/baremetal-cli.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The management endpoints as the real `baremetal` CLI calls them (boot device, NMI, power
 * timeout), through the API and a conductor process, on fake hardware: the fake management
 * interface keeps what it was asked in driver_internal_info.
 */
describe.skipIf(!BAREMETAL)('the baremetal CLI: boot device, inject nmi, power timeout', () => {
  let database: TestDatabase;
  let stack: Services;
  let rest: ApiClient;
  let endpoint: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    stack = await startTestServices({ databaseUrl: database.url, conductors: 1, api: true, startTimeoutMs: 60_000 });
    endpoint = stack.apiUrl as string;
    rest = new ApiClient(endpoint);
  });
  afterAll(async () => {
    await stack?.stop();
    await database?.drop();
  });

  it('sets and shows the boot device, lists the supported ones, injects an NMI, powers on with a timeout', async () => {
    const node = await rest.createNode({ driver: 'fake-hardware', name: 'mgmt' });
    await baremetal(endpoint, ['node', 'boot', 'device', 'set', 'mgmt', 'pxe']);
    expect(await baremetal(endpoint, ['node', 'boot', 'device', 'show', 'mgmt', '-f', 'json'])).toEqual({
      boot_device: 'pxe',
      persistent: false,
    });
    await baremetal(endpoint, ['node', 'boot', 'device', 'set', 'mgmt', 'disk', '--persistent']);
    expect(await baremetal(endpoint, ['node', 'boot', 'device', 'show', 'mgmt', '-f', 'json'])).toEqual({
      boot_device: 'disk',
      persistent: true,
    });
    expect(await baremetal(endpoint, ['node', 'boot', 'device', 'show', 'mgmt', '--supported', '-f', 'json'])).toEqual({
      // The CLI joins the API's list.
      supported_boot_devices: 'pxe, disk, cdrom',
    });
    await expect(baremetal(endpoint, ['node', 'boot', 'device', 'set', 'mgmt', 'bios'])).rejects.toThrow(
      /Boot device bios is not supported/,
    );
    await baremetal(endpoint, ['node', 'inject', 'nmi', 'mgmt']);
    expect((await rest.node(node.uuid)).driver_internal_info).toMatchObject({ fake_nmi_count: 1 });
    await baremetal(endpoint, ['node', 'power', 'on', 'mgmt', '--power-timeout', '30']);
    await waitFor(
      'power on',
      async () => ((await rest.node(node.uuid)).power_state === 'power on' ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
  }, 120_000);
});
