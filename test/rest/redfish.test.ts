import { ApiClient } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { type RedfishBmc, SimulatedMachinePower, startRedfishBmc } from '@bmaas/redfish-bmc';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServices } from '../support/test-services.js';

const PASSWORD = 'Rf-test-Passw0rd';
const MACS = ['52:54:00:5e:00:01', '52:54:00:5e:00:02'];

/**
 * The `redfish` hardware type through the REST API and a real conductor process, against the
 * Redfish BMC's simulated machine on loopback: enrolment, manage (power read, BIOS settings
 * and firmware cached), power, boot device, out-of-band inspection, a BIOS clean step without
 * the ramdisk, and wrong credentials in last_error with the password in no log line.
 */
describe('the redfish hardware type through REST', () => {
  let database: TestDatabase;
  let stack: Services | undefined;
  let rest: ApiClient;
  let bmc: RedfishBmc;
  let power: SimulatedMachinePower;

  beforeAll(async () => {
    power = new SimulatedMachinePower();
    bmc = await startRedfishBmc({
      systems: [
        {
          id: 'rf-1',
          power,
          hardware: {
            nics: MACS,
            disks: [{ capacityBytes: 10 * 2 ** 30, serialNumber: 'rf-disk-1' }],
            processors: [{ model: 'QEMU Virtual CPU', cores: 2, threads: 2, maxSpeedMHz: 2000 }],
            memoryMiB: [1024, 1024],
          },
        },
      ],
      username: 'admin',
      password: PASSWORD,
    });
    database = await createTestDatabase();
    stack = await startTestServices({
      databaseUrl: database.url,
      conductors: 1,
      startTimeoutMs: 60_000,
      env: {
        BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,redfish',
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
        BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
        BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,redfish',
        BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,redfish',
        BMAAS_DEFAULT__ENABLED_INSPECT_INTERFACES: 'no-inspect,fake,agent,redfish',
        BMAAS_DEFAULT__ENABLED_BIOS_INTERFACES: 'no-bios,fake,redfish',
        BMAAS_DEFAULT__ENABLED_FIRMWARE_INTERFACES: 'no-firmware,fake,redfish',
        BMAAS_INSPECTOR__ADD_PORTS: 'all',
        BMAAS_REDFISH__CONNECTION_ATTEMPTS: '3',
        BMAAS_REDFISH__CONNECTION_RETRY_INTERVAL: '0.2',
        BMAAS_DEFAULT__LOG_LEVEL: 'debug',
      },
    });
    rest = new ApiClient(stack.apiUrl as string, { version: '1.114' });
  }, 120_000);

  afterAll(async () => {
    rest?.close();
    await stack?.stop();
    await database?.drop();
    await bmc?.close();
  });

  const driverInfo = (password = PASSWORD) => ({
    redfish_address: bmc.url,
    redfish_username: 'admin',
    redfish_password: password,
  });

  it('enrols, manages, powers, sets the boot device, inspects out of band, and applies a BIOS setting', async () => {
    const created = await rest.createNode({ driver: 'redfish', name: 'rf-1', driver_info: driverInfo() });
    expect(created).toMatchObject({
      power_interface: 'redfish',
      management_interface: 'redfish',
      inspect_interface: 'redfish',
      bios_interface: 'redfish',
      firmware_interface: 'redfish',
      deploy_interface: 'direct',
    });
    expect((created.driver_info as Record<string, unknown>).redfish_password).toBe('******');

    const managed = await rest.provisionAndWait('rf-1', 'manage', 'manageable', 30_000);
    expect(managed.power_state).toBe('power off');
    const bios = await rest.request<{ bios: Array<{ name: string; value: string }> }>('GET', '/v1/nodes/rf-1/bios');
    expect(bios.body.bios.find((s) => s.name === 'ProcVirtualization')?.value).toBe('Enabled');
    const firmware = await rest.request<{ firmware: Array<Record<string, unknown>> }>('GET', '/v1/nodes/rf-1/firmware');
    expect(firmware.body.firmware.map((c) => [c.component, c.current_version])).toEqual(
      expect.arrayContaining([
        ['bios', '1.0.0'],
        ['bmc', '1.0.0'],
      ]),
    );

    expect((await rest.power('rf-1', 'power on')).status).toBe(202);
    await rest.waitForPowerState('rf-1', 'power on', 30_000);
    expect(await power.powerState()).toBe('On');

    const set = await rest.request('PUT', '/v1/nodes/rf-1/management/boot_device', {
      boot_device: 'pxe',
      persistent: true,
    });
    expect(set.status).toBe(204);
    expect((await rest.request('GET', '/v1/nodes/rf-1/management/boot_device')).body).toEqual({
      boot_device: 'pxe',
      persistent: true,
    });
    expect(bmc.control.system('rf-1').bootOverride).toMatchObject({ target: 'Pxe', enabled: 'Continuous' });
    const supported = await rest.request<{ supported_boot_devices: string[] }>(
      'GET',
      '/v1/nodes/rf-1/management/boot_device/supported',
    );
    expect(supported.body.supported_boot_devices).toEqual(expect.arrayContaining(['pxe', 'disk', 'cdrom']));

    const inspected = await rest.provisionAndWait('rf-1', 'inspect', 'manageable', 30_000);
    expect(inspected.properties).toMatchObject({ cpus: 2, memory_mb: 2048, local_gb: 9, cpu_arch: 'x86_64' });
    const ports = await rest.request<{ ports: Array<{ address: string }> }>('GET', '/v1/nodes/rf-1/ports');
    expect(ports.body.ports.map((p) => p.address).sort()).toEqual(MACS);
    const inventory = await rest.request<{ inventory: { disks: Array<{ size: number }> } }>(
      'GET',
      '/v1/nodes/rf-1/inventory',
    );
    expect(inventory.body.inventory.disks.map((d) => d.size)).toEqual([10 * 2 ** 30]);

    const clean = await rest.provision('rf-1', 'clean', {
      disable_ramdisk: true,
      clean_steps: [
        {
          interface: 'bios',
          step: 'apply_configuration',
          args: { settings: [{ name: 'ProcVirtualization', value: 'Disabled' }] },
        },
      ],
    });
    expect(clean.status).toBe(202);
    const cleaned = await rest.settled('rf-1', 'manageable', 60_000);
    expect(cleaned.last_error).toBeNull();
    expect(bmc.control.system('rf-1').biosAttributes.ProcVirtualization).toBe('Disabled');
    const after = await rest.request<{ ProcVirtualization: { value: string } }>(
      'GET',
      '/v1/nodes/rf-1/bios/ProcVirtualization',
    );
    expect(after.body.ProcVirtualization.value).toBe('Disabled');
  }, 180_000);

  it('reports wrong credentials in one clear last_error, and the password is in no log line', async () => {
    await rest.createNode({ driver: 'redfish', name: 'rf-wrong', driver_info: driverInfo('not-the-password') });
    expect((await rest.provision('rf-wrong', 'manage')).status).toBe(202);
    const node = await rest.settled('rf-wrong', 'enroll', 30_000);
    expect(node.last_error).toMatch(/refused the credentials \(HTTP 401\): wrong redfish_username or redfish_password/);
    await waitFor(
      'the conductor to log the failure',
      async () =>
        stack?.conductors[0]?.process.lines.some((l) => JSON.stringify(l).includes('refused the credentials'))
          ? true
          : undefined,
      { timeoutMs: 10_000 },
    );
    const lines = [...(stack?.conductors[0]?.process.lines ?? []), ...(stack?.api?.lines ?? [])].map((l) =>
      JSON.stringify(l),
    );
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.filter((l) => l.includes(PASSWORD) || l.includes('not-the-password'))).toEqual([]);
  }, 60_000);

  it('logs out of its BMC sessions when the conductor stops', async () => {
    const sessions = () => bmc.control.requests.filter((r) => r.method === 'DELETE' && /Sessions\/.+/.test(r.path));
    expect(sessions()).toEqual([]);
    await stack?.stop();
    stack = undefined;
    expect(sessions().map((r) => r.status)).toEqual([204]);
  }, 60_000);
});
