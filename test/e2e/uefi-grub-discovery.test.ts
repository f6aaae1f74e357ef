// Discovery of a UEFI machine: an unknown machine (OVMF, q35) loads GRUB by UEFI HTTP Boot, GRUB's
// root config asks the boot configuration API for /v1/boot/<MAC>/grub.cfg, and with
// [discovery]enabled the API has a conductor answer with the grub interface's discovery config
// (the API renders none itself): GRUB boots the inspection ramdisk, whose inventory enrols the
// machine as a node with its ports and properties.

import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTestRamdisk, netnsUnavailableReason, RAMDISK_KERNEL_ARGS } from '@bmaas/lab';
import { describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { filesServedTo } from './lib/evidence.js';
import { GRUB_EFI_FILE } from './lib/grub-image.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingUefiLabTools } from './lib/prerequisites.js';
import { inspected, startNetnsProductLab } from './lib/product-lab.js';

const LABEL = 'uefi-grub-discovery';
const CACHE_DIR = process.env.BMAAS_E2E_CACHE ?? fileURLToPath(new URL('./.cache', import.meta.url));
const BOOT_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 420_000;
const ACTION_TIMEOUT_MS = 60_000;

const missingTools = await missingUefiLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))('discovery of an unknown UEFI machine through GRUB', () => {
  const suite = useProductLab(LABEL, async (base) => {
    // The inspection ramdisk, served by the first conductor's file server (GRUB's image is there too).
    const ramdisk = await buildTestRamdisk(CACHE_DIR);
    await mkdir(join(base.workDir, 'http-0', 'discovery'), { recursive: true });
    await copyFile(ramdisk.kernel, join(base.workDir, 'http-0', 'discovery', 'kernel'));
    await copyFile(ramdisk.initrd, join(base.workDir, 'http-0', 'discovery', 'initrd'));
    return startNetnsProductLab({
      ...base,
      conductors: 2,
      uefiGrub: true,
      env: (layout) => ({
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,grub',
        BMAAS_DISCOVERY__ENABLED: 'true',
        BMAAS_DISCOVERY__KERNEL_APPEND_PARAMS: RAMDISK_KERNEL_ARGS,
        BMAAS_DISCOVERY__INTERFACES: 'inspect:agent,power:qemu',
        BMAAS_DISCOVERY__NAME_TEMPLATE: 'uefi-{serial}',
        BMAAS_DISCOVERY__DEPLOY_KERNEL: `${layout.httpUrls[0]}/discovery/kernel`,
        BMAAS_DISCOVERY__DEPLOY_RAMDISK: `${layout.httpUrls[0]}/discovery/initrd`,
      }),
    });
  });

  it(
    'an unknown UEFI machine boots the discovery ramdisk GRUB was given and is enrolled with its ports',
    async ({ expect }) => {
      const { lab } = suite;
      const mac = '52:54:00:e3:f2:01';
      const machine = await lab.addMachine('disc-uefi', mac, {
        firmware: 'uefi',
        hardware: { cpus: 1, memoryMb: 512, disks: [{ sizeMb: 5 * 1024, serial: 'uefi-disk' }], serial: 'UEFI-SN-1' },
      });
      await (await machine.qmp()).execute('cont'); // no node yet: nothing in the product powers it on
      const posted = await machine.waitForSerial(/E2E-INSPECTION status=(\d+) node=(\S*)/, BOOT_TIMEOUT_MS);
      await machine.stop();
      expect(posted[1]).toBe('202');
      const uuid = posted[2] as string;

      const serial = await machine.readSerial();
      expect(serial).toContain(`bmaas: unknown machine ${mac}: loading the discovery ramdisk`);
      // GRUB from the first conductor, then the discovery ramdisk from where [discovery] says; no node's files.
      const ip = await (lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
      const urls = new Set(
        filesServedTo(lab.stack, ip)
          .filter((r) => r.status === 200)
          .map((r) => r.url),
      );
      expect(urls).toEqual(new Set([`/${GRUB_EFI_FILE}`, '/grub/grub.cfg', '/discovery/kernel', '/discovery/initrd']));
      const served = lab.stack.api.lines.filter(
        (line) => line.message === 'boot config served' && line.nodeUuid === 'discovery',
      );
      expect(served.length).toBeGreaterThanOrEqual(1);

      const node = await lab.api.waitForNode(uuid, 'to have its properties', ACTION_TIMEOUT_MS, 250, inspected);
      expect(node).toMatchObject({
        name: 'uefi-UEFI-SN-1',
        provision_state: 'enroll',
        inspect_interface: 'agent',
        power_interface: 'qemu',
        properties: { cpus: 1, cpu_arch: 'x86_64' },
      });
      const ports = await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}/ports?detail=true`);
      const addresses = (ports.body as { ports: Array<{ address: string; pxe_enabled: boolean }> }).ports;
      expect(addresses.map((p) => [p.address, p.pxe_enabled])).toContainEqual([mac, true]);
    },
    TEST_TIMEOUT_MS,
  );
});
