// Machines behind the lab's Redfish BMC deployed to disk through the redfish-virtual-media boot
// interface: the conductor builds each node's boot ISO (ramdisk, command line with the API and
// a pregenerated agent token, network_data as config-2), the BMC fetches it from the
// conductor's http_root (reached at [deploy]external_http_url, as from a BMC network apart
// from the provisioning one) and puts it in the machine's CD drive, the machine boots the CD
// once, and the ramdisk calls the API back. Each instance boots its disk and reports; each
// node's ISO is ejected and deleted once it is active. Measured: deploy -> active.
//   1. BIOS, on a bridge with NO DHCP server at all: the ramdisk sets its static address from
//      the CD's network_data, the instance the same address from its config drive.
//   2. UEFI (OVMF, q35), on a bridge with DHCP: GRUB on the ISO's EFI system partition boots
//      the ramdisk (the cloud kernel has no AHCI driver, so it cannot read a q35 CD and takes
//      DHCP), and OVMF boots the instance's disk.
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { netnsUnavailableReason, type RedfishMachineBmc } from '@bmaas/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { type LabSuite, useProductLab } from './lib/lab-suite.js';
import { missingVirtualMediaLabTools } from './lib/prerequisites.js';
import { type ProductLab, type ProductLabOptions, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';
import { deployThroughVirtualMedia, VMEDIA_DEPLOY_TIMEOUT_MS } from './lib/virtual-media-deploy.js';

const LABEL = 'redfish-virtual-media';
const DISK_BYTES = 128 * 1024 * 1024;
const TEST_TIMEOUT_MS = VMEDIA_DEPLOY_TIMEOUT_MS + 420_000;
/** The BIOS machine's static address on the lab bridge (192.168.77.1/24, where the API and conductor listen). */
const STATIC_IP = '192.168.77.50';
const BIOS = { name: 'vm0', mac: '52:54:00:e2:5a:01', uuid: '3c1e7a52-9d4b-4f0e-8a61-7b2d5e9c4f17' };
const UEFI = { name: 'vm1', mac: '52:54:00:e2:5a:02', uuid: '6a0d2f8e-1b7c-4e93-9c25-8f4a3d6b1e70' };
const NETWORK_DATA = {
  links: [{ id: 'prov0', type: 'phy', ethernet_mac_address: BIOS.mac, mtu: 1500 }],
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
const ENV = {
  BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,redfish',
  BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,redfish-virtual-media',
  BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,redfish',
  BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,redfish',
  BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
  BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT: '60',
};
const missingTools = await missingVirtualMediaLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

/** One lab, one conductor whose http_root the BMCs reach, and the instance image served. */
function useVirtualMediaLab(dhcp: boolean) {
  const state: { lab?: ProductLab; served?: ServedInstanceImage } = {};
  const suite: LabSuite = useProductLab(`${LABEL}-${dhcp ? 'dhcp' : 'no-dhcp'}`, async (base) => {
    const options: ProductLabOptions = { ...base, conductors: 1, dhcp, bmcReachesHttpRoot: true, env: ENV };
    state.lab = await startNetnsProductLab(options);
    state.served = await serveInstanceImage(state.lab);
    return state.lab;
  });
  afterAll(async () => {
    await state.served?.server.close();
  });
  const machine = async (name: string, mac: string, firmware: 'bios' | 'uefi') => {
    const lab = state.lab as ProductLab;
    const disk = join(lab.workDir, `${name}.disk`);
    await writeFile(disk, '');
    await truncate(disk, DISK_BYTES);
    return lab.addRedfishMachine(name, mac, { disk, firmware });
  };
  return { suite, state, machine };
}

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'virtual media deploys (redfish-virtual-media, lab Redfish BMC)',
  () => {
    describe('on a network without DHCP', () => {
      const { suite, state, machine } = useVirtualMediaLab(false);
      let bmc: RedfishMachineBmc;
      let driverInfo: Record<string, unknown>;
      beforeAll(async () => {
        ({ bmc, driverInfo } = await machine(BIOS.name, BIOS.mac, 'bios'));
      }, 120_000);

      it(
        '1. a BIOS machine deploys through its virtual CD with a static network_data; the instance boots its disk with the same address; the ISO is gone',
        async () => {
          const outcome = await deployThroughVirtualMedia({
            lab: suite.lab,
            bmc,
            driverInfo,
            ramdisk: suite.ramdisk,
            served: state.served as ServedInstanceImage,
            ...BIOS,
            networkData: NETWORK_DATA,
          });
          const ip = STATIC_IP.replace(/\./g, '\\.');
          // The ramdisk set its address from the CD's network_data and never asked DHCP (there is none).
          expect(outcome.ramdiskSerial).toMatch(
            new RegExp(`E2E-NETWORK static iface=eth0 ip=${ip}/24 gateway=192\\.168\\.77\\.1`),
          );
          expect(outcome.ramdiskSerial).toMatch(/E2E-STATIC ok iface=eth0/);
          expect(outcome.ramdiskSerial).not.toMatch(/E2E-DHCP/);
          // The instance: the same address, from its config drive, and its report went over it.
          expect(outcome.instanceSerial).toMatch(new RegExp(`INSTANCE-NETWORK static iface=eth0 ip=${ip}\\b`));
          console.log(`[${LABEL}] BIOS, no DHCP: ${outcome.timeline}`);
        },
        TEST_TIMEOUT_MS,
      );
    });

    describe('a UEFI machine', () => {
      const { suite, state, machine } = useVirtualMediaLab(true);
      let bmc: RedfishMachineBmc;
      let driverInfo: Record<string, unknown>;
      beforeAll(async () => {
        ({ bmc, driverInfo } = await machine(UEFI.name, UEFI.mac, 'uefi'));
      }, 120_000);

      it(
        "2. deploys through its virtual CD (GRUB from the ISO's EFI system partition) and boots its disk; the ISO is gone",
        async () => {
          const outcome = await deployThroughVirtualMedia({
            lab: suite.lab,
            bmc,
            driverInfo,
            ramdisk: suite.ramdisk,
            served: state.served as ServedInstanceImage,
            ...UEFI,
          });
          // OVMF started GRUB from the CD: its menu entry names the node's deploy ramdisk.
          expect(outcome.ramdiskSerial).toContain(`deploy ramdisk of node ${UEFI.uuid}`);
          expect(outcome.ramdiskSerial).toMatch(/E2E-DHCP ok iface=eth0/);
          console.log(`[${LABEL}] UEFI: ${outcome.timeline}`);
        },
        TEST_TIMEOUT_MS,
      );
    });
  },
);
