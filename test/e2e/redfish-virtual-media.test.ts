// A BIOS machine behind the lab's Redfish BMC, on a bridge with NO DHCP server at all, deployed
// to disk through the redfish-virtual-media boot interface: the conductor builds the node's
// boot ISO (ramdisk, command line with the API and a pregenerated agent token, network_data as
// config-2), the BMC fetches it from the conductor's http_root (reached at
// [deploy]external_http_url, as a BMC network apart from the provisioning one would) and puts
// it in the machine's CD drive, the machine boots the CD once, the ramdisk configures its
// static address from network_data and calls the API back. The instance boots its disk with
// the same static address (its config drive carries the node's network_data) and reports to
// the test host over that network. The ISO is ejected and deleted once the node is active.
// Measured: deploy -> active, and where the time goes.
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@bmaas/common';
import { netnsUnavailableReason, type RedfishMachineBmc } from '@bmaas/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { type ProductLab, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';

const LABEL = 'redfish-virtual-media';
const DEPLOY_TIMEOUT_MS = 360_000;
const ACTION_TIMEOUT_MS = 120_000;
const DISK_BYTES = 128 * 1024 * 1024;
const MAC = '52:54:00:e2:5a:01';
const UUID = '3c1e7a52-9d4b-4f0e-8a61-7b2d5e9c4f17';
/** The machine's static address on the lab bridge (192.168.77.1/24, where the API and conductor listen). */
const STATIC_IP = '192.168.77.50';
const NETWORK_DATA = {
  links: [{ id: 'prov0', type: 'phy', ethernet_mac_address: MAC, mtu: 1500 }],
  networks: [
    {
      id: 'provisioning',
      type: 'ipv4',
      link: 'prov0',
      ip_address: STATIC_IP,
      netmask: '255.255.255.0',
      routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '192.168.77.1' }],
      network_id: 'provisioning',
    },
  ],
  services: [{ type: 'dns', address: '192.168.77.1' }],
};

const missingTools = [...(await missingLabTools())];
for (const tool of ['/usr/bin/xorriso', '/usr/lib/ISOLINUX/isolinux.bin']) {
  if (
    !(await readFile(tool).then(
      () => true,
      () => false,
    ))
  )
    missingTools.push(tool);
}
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'virtual media deploy without DHCP (redfish-virtual-media, lab Redfish BMC)',
  () => {
    let lab: ProductLab;
    let served: ServedInstanceImage | undefined;
    let bmc: RedfishMachineBmc;
    let driverInfo: Record<string, unknown>;
    let workDir: string;
    const suite = useProductLab(LABEL, async (base) => {
      workDir = base.workDir;
      lab = await startNetnsProductLab({
        ...base,
        conductors: 1,
        dhcp: false,
        bmcReachesHttpRoot: true,
        env: {
          BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,redfish',
          BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,redfish-virtual-media',
          BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,redfish',
          BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,redfish',
          BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
          BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT: '60',
        },
      });
      served = await serveInstanceImage(lab);
      return lab;
    });
    const serialShows = (pattern: RegExp, timeoutMs: number) =>
      waitFor(
        `the serial console to show ${pattern}`,
        async () => (pattern.test(await bmc.serialSincePowerOn()) ? true : undefined),
        { timeoutMs, intervalMs: 1000, describe: async () => (await bmc.serialSincePowerOn()).slice(-600) },
      );

    beforeAll(async () => {
      const disk = join(workDir, 'vm0.disk');
      await writeFile(disk, '');
      await truncate(disk, DISK_BYTES);
      ({ bmc, driverInfo } = await lab.addRedfishMachine('vm0', MAC, { disk }));
    }, 300_000);
    afterAll(async () => {
      await served?.server.close();
    });

    it(
      '1. deploys a BIOS machine through its virtual CD on a network without DHCP; the instance boots its disk with the same static address; the ISO is gone',
      async () => {
        const imageBase = new URL(String(served?.instanceInfo.image_source)).origin;
        await lab.api.expect(201, 'POST', '/v1/nodes', {
          uuid: UUID,
          name: 'vm0',
          driver: 'redfish',
          boot_interface: 'redfish-virtual-media',
          deploy_interface: 'direct',
          network_data: NETWORK_DATA,
          driver_info: { ...driverInfo, deploy_kernel: suite.ramdisk.kernel, deploy_ramdisk: suite.ramdisk.initrd },
          instance_info: served?.instanceInfo,
        });
        await lab.api.expect(201, 'POST', '/v1/ports', { node_uuid: UUID, address: MAC });
        await lab.api.provisionAndWait(UUID, 'manage', 'manageable', ACTION_TIMEOUT_MS);
        await lab.api.provisionAndWait(UUID, 'provide', 'available', ACTION_TIMEOUT_MS);

        const answered = bmc.redfish.control.requests.length;
        const started = Date.now();
        await lab.api.expect(202, 'PUT', `/v1/nodes/${UUID}/states/provision`, {
          target: 'active',
          configdrive: { meta_data: { hostname: 'vm0', meta: { e2e_report_url: `${imageBase}/report` } } },
        });
        const deployed = await lab.api.waitForProvisionState(UUID, 'active', DEPLOY_TIMEOUT_MS);
        const deploySeconds = (Date.now() - started) / 1000;
        expect(deployed).toMatchObject({ provision_state: 'active', last_error: null });

        // The BMC was asked to insert the node's ISO from the conductor, then to eject it.
        const during = bmc.redfish.control.requests.slice(answered);
        const inserts = during.filter((r) => r.method === 'POST' && /VirtualMedia\.InsertMedia$/.test(r.path));
        const ejects = during.filter((r) => r.method === 'POST' && /VirtualMedia\.EjectMedia$/.test(r.path));
        expect(inserts).toHaveLength(1);
        expect(ejects.length).toBeGreaterThanOrEqual(1);
        const serial = await readFile(bmc.serialLog, 'utf8');
        // The ramdisk came from the CD (boot_method=vmedia), set its address from network_data, never asked DHCP.
        expect(serial).toMatch(new RegExp(`E2E-NETWORK static iface=eth0 ip=${STATIC_IP.replace(/\./g, '\\.')}/24`));
        expect(serial).toMatch(/E2E-STATIC ok iface=eth0/);
        expect(serial).not.toMatch(/E2E-DHCP/);
        expect(serial).toMatch(new RegExp(`E2E-LOOKUP ok node=${UUID}`));
        // Ejected and deleted: nothing of the node is left under the conductor's http_root.
        const httpRoot = lab.stack.conductors[0]?.httpRoot as string;
        expect(await readdir(join(httpRoot, UUID)).catch(() => [])).toEqual([]);
        expect(await readdir(join(workDir, 'vm0.media')).catch(() => []), "the BMC's copy").toEqual([]);

        // The instance: booted from the disk, its network from the config drive, reporting over it.
        const report = await served?.server.waitForReport(UUID, 240_000);
        expect(report?.uuid).toBe(UUID);
        await serialShows(/INSTANCE-POWEROFF/, 60_000);
        const instance = (await bmc.serialSincePowerOn()).split('INSTANCE-UP from disk')[1] ?? '';
        expect(instance).toMatch(
          new RegExp(`INSTANCE-NETWORK static iface=eth0 ip=${STATIC_IP.replace(/\./g, '\\.')}`),
        );
        expect(instance).toMatch(/INSTANCE-REPORTED ok/);

        // Where the time went: the ISO build (conductor log), the ramdisk's boot (its uptime at each marker).
        const built = lab.stack.allLines().find((line) => line.message === 'boot ISO built');
        const uptime = (marker: string) => new RegExp(`${marker}[^\\n]*up=([0-9.]+)`).exec(serial)?.[1] ?? '?';
        console.log(
          `[${LABEL}] deploy -> active ${deploySeconds.toFixed(1)} s; ISO built in ${built?.ms ?? '?'} ms; ` +
            `ramdisk (kernel uptime): up ${uptime('E2E-RAMDISK up')} s, static network ${uptime('E2E-STATIC ok')} s, ` +
            `lookup ${uptime('E2E-LOOKUP ok')} s, agent ${uptime('E2E-AGENT listening')} s, powered off ${uptime('E2E-POWEROFF')} s`,
        );
      },
      DEPLOY_TIMEOUT_MS + 300_000,
    );
  },
);
