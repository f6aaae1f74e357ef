// A UEFI machine (OVMF, q35) behind the lab Redfish BMC, deployed through the `redfish-https`
// boot interface with `direct`: the conductor builds the node's Unified Kernel Image (ramdisk
// kernel, initrd, command line) under its HTTP root and tells the BMC to boot it once by UEFI
// HTTP boot from its URI (Boot.HttpBootUri); the BMC writes that boot option and BootNext into
// the machine's OVMF variable store and starts it. The lab's dnsmasq names no boot file for
// UEFI HTTP clients: DHCP gives the firmware its address only. The ramdisk looks itself up,
// writes the instance image, the node ends active, the machine boots its disk (OVMF:
// \EFI\BOOT\BOOTX64.EFI of the image), and the node's artefact is gone. Prints where the time
// from deploy to active went.
import { existsSync } from 'node:fs';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@bmaas/common';
import type { RedfishMachineBmc } from '@bmaas/lab';
import { netnsUnavailableReason } from '@bmaas/lab';
import { readGlobalVariables } from '@bmaas/redfish-bmc';
import { UKI_STUB } from '@bmaas/redfish-https-boot-interface';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { filesServedTo } from './lib/evidence.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingUefiLabTools } from './lib/prerequisites.js';
import { type ProductLab, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';

const LABEL = 'redfish-https';
const DEPLOY_TIMEOUT_MS = 600_000;
const ACTION_TIMEOUT_MS = 120_000;
const DISK_BYTES = 128 * 1024 * 1024;
const MAC = '52:54:00:e2:5a:01';
const UUID = '3c0e6f2a-9b1d-4e8a-a5c7-2f4d6b8e0a13';

const missingTools = await missingUefiLabTools();
if (!existsSync(UKI_STUB)) missingTools.push('systemd-boot-efi');
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))('a UEFI machine deployed through redfish-https', () => {
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
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,redfish-https',
        BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,redfish',
        BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,redfish',
        BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
        BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT: '60',
      },
    });
    served = await serveInstanceImage(lab);
    return lab;
  });

  beforeAll(async () => {
    const disk = join(workDir, 'rh0.disk');
    await writeFile(disk, '');
    await truncate(disk, DISK_BYTES);
    ({ bmc, driverInfo } = await lab.addRedfishMachine('rh0', MAC, { disk, firmware: 'uefi' }));
  }, 300_000);
  afterAll(async () => {
    await served?.server.close();
  });

  it(
    'boots the deploy ramdisk from the URI the BMC was told, ends active, boots its disk; the artefact is gone',
    async () => {
      await lab.api.expect(201, 'POST', '/v1/nodes', {
        uuid: UUID,
        name: 'rh0',
        driver: 'redfish',
        boot_interface: 'redfish-https',
        deploy_interface: 'direct',
        driver_info: { ...driverInfo, deploy_kernel: suite.ramdisk.kernel, deploy_ramdisk: suite.ramdisk.initrd },
        instance_info: served?.instanceInfo,
      });
      await lab.api.expect(201, 'POST', '/v1/ports', { node_uuid: UUID, address: MAC, pxe_enabled: true });
      await lab.api.provisionAndWait(UUID, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      await lab.api.provisionAndWait(UUID, 'provide', 'available', ACTION_TIMEOUT_MS);

      // Where the time goes: each marker's first appearance after the deploy request.
      const start = Date.now();
      const marks: Record<string, number> = {};
      const markers: Array<[string, RegExp]> = [
        ['firmware HTTP boot starts', />>Start HTTP Boot over IPv4/],
        ['ramdisk kernel up', /E2E-RAMDISK up/],
        ['ramdisk DHCP', /E2E-DHCP ok/],
        ['agent looked up', /E2E-LOOKUP ok/],
        ['instance up from disk', /INSTANCE-UP from disk/],
      ];
      const serialAtStart = (await readFile(bmc.serialLog, 'latin1').catch(() => '')).length;
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const serial = await readFile(bmc.serialLog, 'latin1').catch(() => '');
          const since = serial.slice(serialAtStart);
          for (const [name, pattern] of markers) if (!(name in marks) && pattern.test(since)) marks[name] = Date.now();
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      })();
      const printTimeline = () => {
        const timeline = Object.entries(marks)
          .sort(([, a], [, b]) => a - b)
          .map(([name, at]) => `${((at - start) / 1000).toFixed(1).padStart(7)} s  ${name}`);
        console.log(`[${LABEL}] from the deploy request (${new Date(start).toISOString()}):\n${timeline.join('\n')}`);
      };
      // printed however the deploy ends: where the time went is the finding when it does not finish
      onTestFinished(() => {
        watching = false;
        printTimeline();
      });
      await lab.api.expect(202, 'PUT', `/v1/nodes/${UUID}/states/provision`, { target: 'active' });
      const uri = await waitFor(
        'the BMC to be told the HTTP boot URI',
        async () => bmc.redfish.control.system().bootOverride.httpBootUri ?? undefined,
        { timeoutMs: ACTION_TIMEOUT_MS, intervalMs: 250 },
      );
      marks['BMC told the URI'] = Date.now();
      const deployed = await lab.api.waitForProvisionState(UUID, 'active', DEPLOY_TIMEOUT_MS);
      marks.active = Date.now();
      expect(deployed).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
      await waitFor(
        'the instance to come up from its disk',
        async () => ('instance up from disk' in marks ? true : undefined),
        {
          timeoutMs: 300_000,
          intervalMs: 1000,
          describe: async () => (await readFile(bmc.serialLog, 'latin1')).slice(-600),
        },
      );
      watching = false;
      await watcher;

      // the URI is the node's artefact on its conductor, and the firmware fetched it from there
      const conductor = lab.stack.conductors[0];
      expect(uri).toMatch(new RegExp(`^http://[^/]+/${UUID}/boot\\.efi$`));
      const ip = await (lab.dnsmasq?.waitForDhcpAck(MAC, 1000) ?? '');
      expect(filesServedTo(lab.stack, ip)).toContainEqual({
        url: `/${UUID}/boot.efi`,
        status: 200,
        remote: ip,
        conductor: conductor?.hostname,
      });
      const serial = (await readFile(bmc.serialLog, 'latin1')).slice(serialAtStart);
      expect(serial).toContain(`URI: ${uri}`);
      expect(serial).toContain(`E2E-LOOKUP ok node=${UUID}`);
      expect(serial).not.toMatch(/E2E-FAILED/);
      // one override, UefiHttp once with the URI (the deploy did not set network boot over it)
      const patches = bmc.redfish.control.requests.filter((r) => r.method === 'PATCH' && r.path === bmc.systemId);
      expect(patches.length).toBeGreaterThanOrEqual(2); // UefiHttp, then the disk for the instance
      // OVMF used BootNext and deleted it; the artefact and the ramdisk images are gone
      const vars = await readGlobalVariables(bmc.machine.ovmfVars as string);
      expect(vars.has('BootNext')).toBe(false);
      expect(existsSync(join(workDir, 'http-0', UUID, 'boot.efi'))).toBe(false);
      expect(existsSync(join(workDir, 'http-0', UUID, 'deploy_kernel'))).toBe(false);
    },
    DEPLOY_TIMEOUT_MS + 420_000,
  );
});
