// Machines behind real IPMI BMCs (OpenIPMI's ipmi_sim, one per machine on its own address in
// the lab namespace) driven by the product's ipmi hardware type: deploy through three
// conductors with the boot device switched over IPMI, a power change behind the service's
// back, a BMC that stops answering, a wrong password, and the boot device API.
import { existsSync } from 'node:fs';
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@bmaas/common';
import { createStores } from '@bmaas/db';
import type { MachineBmc } from '@bmaas/lab';
import { netnsUnavailableReason } from '@bmaas/lab';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { uuidsOwnedByEach } from './lib/evidence.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { ipmiNodeBodyFor, type ProductLab, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';

const LABEL = 'ipmi-machines';
/** Three machines share two emulating cores with the rest of the run. */
const BOOT_TIMEOUT_MS = 300_000;
const ACTION_TIMEOUT_MS = 90_000;
/** Short product timings, so each scenario shows its behaviour within a minute. */
const SYNC_INTERVAL_S = 3;
const SYNC_MAX_RETRIES = 2;
const LAN_TIMEOUT_S = 1;
const COMMAND_RETRY_TIMEOUT_S = 10;
/** Each machine's virtio disk, which the deploy writes the instance image to. */
const DISK_BYTES = 128 * 1024 * 1024;

const missingTools = await missingLabTools();
const noIpmi = ['ipmi_sim', 'ipmitool'].filter((tool) => !onPath(tool));
const problem =
  missingTools.length + noIpmi.length > 0
    ? `missing ${[...missingTools, ...noIpmi].join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, command)));
}

/** Command lines of every running ipmitool, as a process list shows them. */
async function ipmitoolCommandLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const pid of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0')[0]?.endsWith('ipmitool')) lines.push(cmdline.replaceAll('\0', ' '));
  }
  return lines;
}

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'machines behind IPMI BMCs (ipmi hardware type, three conductors)',
  () => {
    let lab: ProductLab;
    let workDir: string;
    let served: ServedInstanceImage | undefined;
    const suite = useProductLab(LABEL, async (base) => {
      workDir = base.workDir;
      lab = await startNetnsProductLab({
        ...base,
        conductors: 3,
        env: {
          BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,ipmi',
          BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,qemu,ipmitool',
          BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,ipmitool',
          BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
          BMAAS_CONDUCTOR__SYNC_POWER_STATE_INTERVAL: String(SYNC_INTERVAL_S),
          BMAAS_CONDUCTOR__POWER_STATE_SYNC_MAX_RETRIES: String(SYNC_MAX_RETRIES),
          BMAAS_CONDUCTOR__POWER_FAILURE_RECOVERY_INTERVAL: String(SYNC_INTERVAL_S),
          BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT: '30',
          BMAAS_IPMI__MIN_COMMAND_INTERVAL: '0.5',
          BMAAS_IPMI__LAN_TIMEOUT: String(LAN_TIMEOUT_S),
          BMAAS_IPMI__COMMAND_RETRY_TIMEOUT: String(COMMAND_RETRY_TIMEOUT_S),
        },
      });
      // The instance image the deploys write, served to the machines from the test host.
      served = await serveInstanceImage(lab);
      return lab;
    });
    const machines: Array<{ bmc: MachineBmc; uuid: string; name: string }> = [];
    /** ipmitool command lines seen while the product ran commands (scenarios 3 and 4). */
    const seenCommandLines: string[] = [];
    let sampling: NodeJS.Timeout | undefined;

    const startSampling = () => {
      sampling ??= setInterval(() => {
        void ipmitoolCommandLines().then((lines) => seenCommandLines.push(...lines));
      }, 50);
    };
    const stopSampling = () => {
      clearInterval(sampling);
      sampling = undefined;
    };
    const node = async (uuid: string) => (await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body;
    /** Polls `probe` every half second (the sync loops run every few seconds). */
    const until = <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> =>
      waitFor(what, probe, { timeoutMs, intervalMs: 500 });

    beforeAll(async () => {
      const owners = lab.stack.conductors.map((conductor) => conductor.hostname);
      const uuids = await uuidsOwnedByEach(createStores(suite.database.db), owners);
      for (const [index, owner] of owners.entries()) {
        const name = `ipmi${index}`;
        const disk = join(workDir, `${name}.disk`);
        await writeFile(disk, '');
        await truncate(disk, DISK_BYTES);
        const bmc = await lab.addBmcMachine(name, `52:54:00:e2:1b:0${index + 1}`, { disk });
        machines.push({ bmc, uuid: uuids.get(owner) as string, name });
      }
    }, 300_000);

    afterEach(stopSampling);
    afterAll(async () => {
      stopSampling();
      await served?.server.close();
    });

    it(
      '1. deploys three ipmi machines through three conductors, the boot device switched over IPMI',
      async () => {
        const nodes = await Promise.all(
          machines.map(async ({ bmc, uuid, name }) => {
            await lab.api.expect(201, 'POST', '/v1/nodes', {
              ...ipmiNodeBodyFor(bmc, suite.ramdisk, { uuid, name }),
              instance_info: served?.instanceInfo,
            });
            await lab.api.expect(201, 'POST', '/v1/ports', { address: bmc.mac, node_uuid: uuid });
            const managed = await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
            expect(managed.power_state, 'read through the BMC').toBe('power off');
            await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
            expect(bmc.machineRunning(), 'nothing powered it on yet').toBe(false);
            return lab.api.provisionAndWait(uuid, 'active', 'active', BOOT_TIMEOUT_MS);
          }),
        );
        const owners = new Set<string>();
        for (const [index, deployed] of nodes.entries()) {
          const { bmc, name, uuid } = machines[index] as (typeof machines)[number];
          owners.add(String(deployed.conductor));
          expect(deployed).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
          const serial = await readFile(bmc.serialLog, 'utf8');
          // Booted the ramdisk over the network (bootdev pxe), then its disk (bootdev disk) after the deploy.
          // (The conductor powers it off right after the heartbeat, often before its console shows it.)
          expect(serial).toMatch(
            new RegExp(`=== power on, bootdev=pxe, order=n ===[\\s\\S]*E2E-LOOKUP ok node=${uuid}`),
          );
          await bmc.waitForSerialSincePowerOn(/bootdev=default[\s\S]*INSTANCE-UP from disk/, 120_000);
          const chassis = await readFile(join(lab.workDir, `${name}-bmc`, 'chassis.log'), 'utf8');
          expect(chassis).toMatch(/set boot pxe[\s\S]*set power 1[\s\S]*set boot default[\s\S]*set power 1/);
        }
        expect(owners.size, 'three different conductors').toBe(3);
      },
      BOOT_TIMEOUT_MS + 120_000,
    );

    it('2. notices a machine powered off behind its back within the sync interval', async () => {
      const { bmc, uuid } = machines[0] as (typeof machines)[number];
      expect((await node(uuid)).power_state).toBe('power on');
      const off = await bmc.ipmitool(['power', 'off']);
      expect(off.code, off.stderr).toBe(0);
      const started = Date.now();
      await until('power off recorded', SYNC_INTERVAL_S * 1000 * 5 + 30_000, async () =>
        (await node(uuid)).power_state === 'power off' ? true : undefined,
      );
      console.log(`[${LABEL}] power off behind the back seen after ${Date.now() - started} ms`);
      const line = lab.stack
        .allLines()
        .find((l) => l.message === 'power state changed outside the service' && l.nodeUuid === uuid);
      expect(line).toMatchObject({ from: 'power on', to: 'power off' });
    }, 120_000);

    it('3. a BMC that does not answer: a clear error within the deadline, then maintenance with fault, cleared when back', async () => {
      const { bmc, uuid } = machines[1] as (typeof machines)[number];
      startSampling();
      bmc.freeze();
      try {
        const started = Date.now();
        await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power off' });
        const failedNode = await until('power action failed', 60_000, async () => {
          const current = await node(uuid);
          return current.target_power_state === null && current.last_error ? current : undefined;
        });
        const elapsed = Date.now() - started;
        console.log(`[${LABEL}] power action on a dead BMC failed after ${elapsed} ms: ${failedNode.last_error}`);
        expect(String(failedNode.last_error)).toContain(`BMC ${bmc.address}:623`);
        expect(String(failedNode.last_error)).toMatch(/no answer within .*down or unreachable.*wrong credentials/);
        expect(elapsed).toBeLessThan(60_000);
        const faulted = await until('maintenance with fault', 90_000, async () => {
          const current = await node(uuid);
          return current.fault === 'power failure' ? current : undefined;
        });
        expect(faulted).toMatchObject({ maintenance: true, power_state: null });
        expect(String(faulted.maintenance_reason)).toMatch(/consecutive reads .* failed/);
      } finally {
        bmc.thaw();
      }
      const recovered = await until('fault cleared', 90_000, async () => {
        const current = await node(uuid);
        return current.maintenance === false ? current : undefined;
      });
      expect(recovered).toMatchObject({ fault: null, maintenance_reason: null, power_state: 'power on' });
    }, 300_000);

    it('4. a wrong password: a clear error, and the password in no log line and no process argument', async () => {
      const { bmc } = machines[2] as (typeof machines)[number];
      const wrong = 'Wrong-pass-e2e';
      const created = await lab.api.expect(
        201,
        'POST',
        '/v1/nodes',
        ipmiNodeBodyFor(bmc, suite.ramdisk, {
          uuid: '3b0c2a4e-7f3d-4c1e-9a55-2f6d8e1b0c44',
          name: 'wrongpw',
          driverInfo: { ipmi_password: wrong },
        }),
      );
      expect(created.body.driver_info.ipmi_password).toBe('******');
      startSampling();
      await lab.api.expect(202, 'PUT', '/v1/nodes/wrongpw/states/provision', { target: 'manage' });
      const refused = await until('manage failed', ACTION_TIMEOUT_MS, async () => {
        const current = await node('wrongpw');
        return current.provision_state === 'enroll' && current.last_error ? current : undefined;
      });
      stopSampling();
      console.log(`[${LABEL}] wrong password: ${refused.last_error}`);
      expect(String(refused.last_error)).toContain(`BMC ${bmc.address}:623`);
      expect(String(refused.last_error)).toMatch(
        /refused the session .*\(RAKP 2 HMAC is invalid\).*wrong ipmi_username or ipmi_password/,
      );

      const secrets = [wrong, ...machines.map((m) => m.bmc.password)];
      const logText = JSON.stringify(lab.stack.allLines());
      const logFiles = await Promise.all(
        (await readdir(join(lab.workDir, 'logs'))).map((f) => readFile(join(lab.workDir, 'logs', f), 'utf8')),
      );
      // The product did run ipmitool while we looked (scenario 3 holds each for seconds): the check can fail.
      expect(seenCommandLines.some((line) => line.includes(' -f '))).toBe(true);
      for (const secret of secrets) {
        expect(logText).not.toContain(secret);
        for (const file of logFiles) expect(file).not.toContain(secret);
        for (const line of seenCommandLines) expect(line).not.toContain(secret);
      }
      expect(JSON.stringify((await node('wrongpw')).driver_info)).not.toContain(wrong);
    }, 180_000);

    it('5. boot device pxe then a reboot brings the machine into iPXE; disk brings it to its disk', async () => {
      const { bmc, uuid } = machines[2] as (typeof machines)[number];
      const supported = await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}/management/boot_device/supported`);
      expect(supported.body.supported_boot_devices).toEqual(expect.arrayContaining(['pxe', 'disk']));

      await lab.api.expect(204, 'PUT', `/v1/nodes/${uuid}/management/boot_device`, { boot_device: 'pxe' });
      expect((await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}/management/boot_device`)).body).toMatchObject({
        boot_device: 'pxe',
      });
      await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'rebooting' });
      await lab.api.waitForPowerState(uuid, 'power on', ACTION_TIMEOUT_MS);
      await bmc.waitForSerialSincePowerOn(/bootdev=pxe[\s\S]*Booting from ROM/, 120_000);

      await lab.api.expect(204, 'PUT', `/v1/nodes/${uuid}/management/boot_device`, {
        boot_device: 'disk',
        persistent: true,
      });
      await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'rebooting' });
      await lab.api.waitForPowerState(uuid, 'power on', ACTION_TIMEOUT_MS);
      await bmc.waitForSerialSincePowerOn(/bootdev=default[\s\S]*INSTANCE-UP from disk/, 120_000);
      expect(await bmc.serialSincePowerOn()).not.toMatch(/Booting from ROM/);
    }, 300_000);
  },
);
