// A lab machine behind a Redfish BMC (@bmaas/redfish-bmc with its QEMU backend: power and
// resets through QMP, the boot override through the machine's boot order, BIOS settings
// applied at the next boot) driven by the product's redfish hardware type: inspected out of
// band, a BIOS setting applied as a clean step and visible after the reboot, deployed with
// `direct` (the boot device switched over Redfish) through a BMC answering 503 for a while,
// booting its disk; then a wrong password in one clear last_error and in no log line.
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@bmaas/common';
import type { RedfishMachineBmc } from '@bmaas/lab';
import { netnsUnavailableReason } from '@bmaas/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { type ProductLab, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';

const LABEL = 'redfish-machines';
const BOOT_TIMEOUT_MS = 300_000;
const ACTION_TIMEOUT_MS = 120_000;
const DISK_BYTES = 128 * 1024 * 1024;
const MAC = '52:54:00:e2:4f:01';
const UUID = '8f1d9a62-4c0b-4e57-b1a3-5d2e7c9f0a41';

const missingTools = await missingLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))('a machine behind a Redfish BMC (redfish hardware type)', () => {
  let lab: ProductLab;
  let workDir: string;
  let served: ServedInstanceImage | undefined;
  let bmc: RedfishMachineBmc;
  let driverInfo: Record<string, unknown>;
  const suite = useProductLab(LABEL, async (base) => {
    workDir = base.workDir;
    lab = await startNetnsProductLab({
      ...base,
      conductors: 1,
      env: {
        BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,redfish',
        BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,qemu,redfish',
        BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,redfish',
        BMAAS_DEFAULT__ENABLED_INSPECT_INTERFACES: 'no-inspect,fake,agent,redfish',
        BMAAS_DEFAULT__ENABLED_BIOS_INTERFACES: 'no-bios,fake,redfish',
        BMAAS_DEFAULT__ENABLED_FIRMWARE_INTERFACES: 'no-firmware,fake,redfish',
        BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
        BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT: '60',
        // A BMC answering 503 for a while: retried, ten times two seconds at most.
        BMAAS_REDFISH__CONNECTION_ATTEMPTS: '10',
        BMAAS_REDFISH__CONNECTION_RETRY_INTERVAL: '2',
        BMAAS_REDFISH__BIOS_APPLY_TIMEOUT: '120',
      },
    });
    served = await serveInstanceImage(lab);
    return lab;
  });
  const node = async (ident: string) => (await lab.api.expect(200, 'GET', `/v1/nodes/${ident}`)).body;
  const serialShows = (pattern: RegExp, timeoutMs: number) =>
    waitFor(
      `the serial console to show ${pattern}`,
      async () => (pattern.test(await bmc.serialSincePowerOn()) ? true : undefined),
      { timeoutMs, intervalMs: 1000, describe: async () => (await bmc.serialSincePowerOn()).slice(-400) },
    );

  beforeAll(async () => {
    const disk = join(workDir, 'rf0.disk');
    await writeFile(disk, '');
    await truncate(disk, DISK_BYTES);
    ({ bmc, driverInfo } = await lab.addRedfishMachine('rf0', MAC, { disk }));
  }, 300_000);
  afterAll(async () => {
    await served?.server.close();
  });

  it('1. inspects the machine out of band: properties and its port from the BMC, nothing booted', async () => {
    const created = await lab.api.expect(201, 'POST', '/v1/nodes', {
      uuid: UUID,
      name: 'rf0',
      driver: 'redfish',
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      driver_info: { ...driverInfo, deploy_kernel: suite.ramdisk.kernel, deploy_ramdisk: suite.ramdisk.initrd },
      instance_info: served?.instanceInfo,
    });
    expect(created.body).toMatchObject({
      power_interface: 'redfish',
      management_interface: 'redfish',
      inspect_interface: 'redfish',
      bios_interface: 'redfish',
    });
    expect(created.body.driver_info.redfish_password).toBe('******');
    const managed = await lab.api.provisionAndWait(UUID, 'manage', 'manageable', ACTION_TIMEOUT_MS);
    expect(managed.power_state, 'read through the BMC').toBe('power off');
    const inspected = await lab.api.provisionAndWait(UUID, 'inspect', 'manageable', ACTION_TIMEOUT_MS);
    expect(inspected.properties).toMatchObject({ cpu_arch: 'x86_64', cpus: 1 });
    expect(Number(inspected.properties.memory_mb)).toBeGreaterThan(0);
    const inventory = await lab.api.request<{ inventory: { disks: Array<{ size: number }> } }>(
      'GET',
      `/v1/nodes/${UUID}/inventory`,
      undefined,
      { 'X-OpenStack-Ironic-API-Version': '1.81' },
    );
    expect(inventory.body.inventory.disks.map((d) => d.size)).toEqual([DISK_BYTES]);
    const ports = await lab.api.expect(200, 'GET', `/v1/nodes/${UUID}/ports`);
    expect(ports.body.ports.map((p: { address: string }) => p.address)).toEqual([MAC]);
    expect(await bmc.poweredOn(), 'out of band: the machine stayed off').toBe(false);
  }, 180_000);

  it('2. applies a BIOS setting as a clean step: pending, applied at the reboot, visible afterwards', async () => {
    const before = await lab.api.expect(200, 'GET', `/v1/nodes/${UUID}/bios/ProcVirtualization`);
    expect(before.body.ProcVirtualization.value).toBe('Enabled');
    await lab.api.expect(202, 'PUT', `/v1/nodes/${UUID}/states/provision`, {
      target: 'clean',
      disable_ramdisk: true,
      clean_steps: [
        {
          interface: 'bios',
          step: 'apply_configuration',
          args: { settings: [{ name: 'ProcVirtualization', value: 'Disabled' }] },
        },
      ],
    });
    const cleaned = await lab.api.settled(UUID, 'manageable', ACTION_TIMEOUT_MS);
    expect(cleaned).toMatchObject({ last_error: null, power_state: 'power off' });
    const after = await lab.api.expect(200, 'GET', `/v1/nodes/${UUID}/bios/ProcVirtualization`);
    expect(after.body.ProcVirtualization.value).toBe('Disabled');
    // The machine was powered on to apply it, and is off again.
    const resets = bmc.redfish.control.requests.filter(
      (r) => r.method === 'POST' && /ComputerSystem\.Reset$/.test(r.path),
    );
    expect(resets.length).toBeGreaterThanOrEqual(2);
    expect(await bmc.poweredOn()).toBe(false);
  }, 240_000);

  it(
    '3. deploys with direct through a BMC answering 503 for a while; the machine boots its disk',
    async () => {
      await lab.api.provisionAndWait(UUID, 'provide', 'available', ACTION_TIMEOUT_MS);
      const answered = bmc.redfish.control.requests.length;
      await lab.api.expect(202, 'PUT', `/v1/nodes/${UUID}/states/provision`, { target: 'active' });
      bmc.redfish.control.failRequests(4, 503);
      const deployed = await lab.api.waitForProvisionState(UUID, 'active', BOOT_TIMEOUT_MS);
      expect(deployed).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
      const during = bmc.redfish.control.requests.slice(answered);
      expect(
        during.filter((r) => r.status === 503),
        'the 503s were answered',
      ).toHaveLength(4);
      // The boot device went over Redfish: PATCHes of the system's Boot, then resets.
      expect(during.some((r) => r.method === 'PATCH' && r.path === bmc.systemId)).toBe(true);
      await serialShows(/INSTANCE-UP from disk/, 180_000);
      const serial = await readFile(bmc.serialLog, 'utf8');
      expect(serial).toMatch(new RegExp(`E2E-LOOKUP ok node=${UUID}`));
    },
    BOOT_TIMEOUT_MS + 240_000,
  );

  it('4. a wrong password: one clear last_error, and no password in any log', async () => {
    const wrong = 'Wrong-redfish-e2e';
    await lab.api.expect(201, 'POST', '/v1/nodes', {
      name: 'rf-wrong',
      driver: 'redfish',
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      driver_info: { ...driverInfo, redfish_password: wrong },
    });
    await lab.api.expect(202, 'PUT', '/v1/nodes/rf-wrong/states/provision', { target: 'manage' });
    const refused = await waitFor(
      'manage failed',
      async () => {
        const current = await node('rf-wrong');
        return current.provision_state === 'enroll' && current.last_error ? current : undefined;
      },
      { timeoutMs: ACTION_TIMEOUT_MS, intervalMs: 500 },
    );
    console.log(`[${LABEL}] wrong password: ${refused.last_error}`);
    expect(String(refused.last_error)).toMatch(
      /: BMC http:\/\/\S+ refused the credentials \(HTTP 401\): wrong redfish_username or redfish_password in driver_info\.$/,
    );
    const logText = JSON.stringify(lab.stack.allLines());
    const logFiles = await Promise.all(
      (await readdir(join(lab.workDir, 'logs'))).map((f) => readFile(join(lab.workDir, 'logs', f), 'utf8')),
    );
    for (const secret of [wrong, bmc.password]) {
      expect(logText).not.toContain(secret);
      for (const file of logFiles) expect(file).not.toContain(secret);
    }
  }, 180_000);
});
