// A UEFI machine (OVMF, q35) with the grub boot interface and a BIOS machine with ipxe, owned by
// different conductors, boot through ONE static dnsmasq configuration and the same API: OVMF's
// UEFI HTTP Boot loads GRUB from the first conductor, GRUB's root config asks the boot
// configuration API for /v1/boot/<MAC>/grub.cfg, the owner answers with the node's grub.cfg,
// and GRUB loads kernel and initrd from the owner. The ramdisk looks itself up and heartbeats,
// its agent writes the instance image to the disk, and the node ends active. An unknown UEFI
// machine gets the GRUB fallback and nothing else.
// The machines are powered by the product's qemu power interface, never by the harness.

import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createStores } from '@bmaas/db';
import { netnsUnavailableReason } from '@bmaas/lab';
import { afterAll, describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { bootConfigServed, filesServedTo, nodeLines, uuidsOwnedByEach } from './lib/evidence.js';
import { GRUB_EFI_FILE } from './lib/grub-image.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingUefiLabTools } from './lib/prerequisites.js';
import { nodeBodyFor, startNetnsProductLab } from './lib/product-lab.js';
import { type ServedInstanceImage, serveInstanceImage } from './lib/served-instance-image.js';

const LABEL = 'uefi-grub-boot';
/** OVMF under TCG takes ~4 s to its first network try and GRUB ~8 s to its config; busy cores 2-3 times that. */
const BOOT_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 420_000;
const ACTION_TIMEOUT_MS = 60_000;
const DISK_BYTES = 128 * 1024 * 1024;

const missingTools = await missingUefiLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'UEFI/GRUB and BIOS/iPXE machines, one static DHCP config, two conductors',
  () => {
    let instanceImage: ServedInstanceImage | undefined;
    const suite = useProductLab(LABEL, async (base) => {
      const lab = await startNetnsProductLab({
        ...base,
        conductors: 2,
        uefiGrub: true,
        env: { BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,grub', BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false' },
      });
      instanceImage = await serveInstanceImage(lab);
      return lab;
    });
    afterAll(async () => {
      await instanceImage?.server.close();
    });

    it.concurrent(
      'a UEFI machine with grub and a BIOS machine with ipxe, owned by different conductors, deploy through the same dnsmasq and API',
      async ({ expect }) => {
        const { lab, ramdisk, database } = suite;
        const owners = lab.stack.conductors.map((conductor) => conductor.hostname);
        const uuids = await uuidsOwnedByEach(createStores(database.db), owners);
        const machines = [
          { name: 'uefi0', mac: '52:54:00:e3:f1:01', firmware: 'uefi', boot: 'grub' },
          { name: 'bios0', mac: '52:54:00:e3:f1:02', firmware: 'bios', boot: 'ipxe' },
        ] as const;
        const runs = await Promise.all(
          machines.map(async (spec, index) => {
            const owner = lab.stack.conductors[index] as (typeof lab.stack.conductors)[number];
            const uuid = uuids.get(owner.hostname) as string;
            // An empty disk the agent writes the instance image to.
            const disk = join(lab.workDir, `${spec.name}.disk`);
            await writeFile(disk, '');
            await truncate(disk, DISK_BYTES);
            const machine = await lab.addMachine(spec.name, spec.mac, { firmware: spec.firmware, disk });
            const events = await machine.qmp();
            const body = nodeBodyFor(machine, ramdisk, { uuid, name: spec.name, bootInterface: spec.boot });
            await lab.api.expect(201, 'POST', '/v1/nodes', {
              ...body,
              automated_clean: false,
              instance_info: instanceImage?.instanceInfo,
            });
            await lab.api.expect(201, 'POST', '/v1/ports', { address: spec.mac, node_uuid: uuid });
            await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
            await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
            const node = await lab.api.provisionAndWait(uuid, 'active', 'active', BOOT_TIMEOUT_MS);
            await machine.stop(); // deployed: the image is on its disk
            return { spec, owner, uuid, machine, events, node };
          }),
        );

        const [uefi, bios] = runs;
        for (const { owner, uuid, node } of runs) {
          expect(node).toMatchObject({ provision_state: 'active', conductor: owner.hostname, power_state: 'power on' });
          // The agent's session (token, URL) ends with the deploy; its version stays on record.
          expect(node.driver_internal_info).toMatchObject({ agent_version: 'e2e-ramdisk' });
          expect(node.driver_internal_info).not.toHaveProperty('agent_url');
          expect(bootConfigServed(lab.stack, uuid)).toBeGreaterThanOrEqual(1);
          const ownerLines = nodeLines(owner.process.lines, uuid);
          expect(ownerLines).toContainEqual(
            expect.objectContaining({ message: 'agent called back', from: 'wait call-back' }),
          );
        }
        expect(uefi?.node.conductor).not.toBe(bios?.node.conductor);

        // UEFI: HTTP Boot of GRUB from the first conductor, its root config there, the node's grub.cfg
        // from the API (answered by the owner), kernel and initrd from the owner.
        if (!uefi || !bios) throw new Error('two runs expected');
        const uefiIp = await (lab.dnsmasq?.waitForDhcpAck(uefi.spec.mac, 1000) ?? '');
        const dhcpLog = (await lab.dnsmasq?.readLog()) ?? '';
        expect(dhcpLog).toMatch(/vendor class: HTTPClient/);
        const first = lab.stack.conductors[0]?.hostname;
        const uefiFiles = filesServedTo(lab.stack, uefiIp);
        expect(uefiFiles).toContainEqual({ url: `/${GRUB_EFI_FILE}`, status: 200, remote: uefiIp, conductor: first });
        expect(uefiFiles).toContainEqual({ url: '/grub/grub.cfg', status: 200, remote: uefiIp, conductor: first });
        for (const image of ['deploy_kernel', 'deploy_ramdisk']) {
          expect(uefiFiles).toContainEqual({
            url: `/${uefi.uuid}/${image}`,
            status: 200,
            remote: uefiIp,
            conductor: uefi.owner.hostname,
          });
        }
        expect(uefiFiles.some((request) => request.url.includes('boot.ipxe'))).toBe(false);
        const served = lab.stack.api.lines.filter(
          (line) => line.message === 'boot config served' && line.nodeUuid === uefi.uuid,
        );
        expect(served.length).toBeGreaterThanOrEqual(1);
        const uefiSerial = await uefi.machine.readSerial();
        expect(uefiSerial).toContain(`bmaas: node ${uefi.uuid}: loading the deploy ramdisk`);
        expect(uefiSerial).toContain(`E2E-NICS macs=${uefi.spec.mac} bootif=${uefi.spec.mac}`);
        expect(uefiSerial).toContain(`E2E-LOOKUP ok node=${uefi.uuid}`);
        expect(uefiSerial).not.toMatch(/E2E-FAILED|E2E-WARN/);

        // BIOS: iPXE's wildcard boot.ipxe from the same dnsmasq, its script through the API, images from its owner.
        const biosIp = await (lab.dnsmasq?.waitForDhcpAck(bios.spec.mac, 1000) ?? '');
        const biosFiles = filesServedTo(lab.stack, biosIp);
        expect(biosFiles).toContainEqual({ url: '/boot.ipxe', status: 200, remote: biosIp, conductor: first });
        expect(biosFiles).toContainEqual({
          url: `/${bios.uuid}/deploy_kernel`,
          status: 200,
          remote: biosIp,
          conductor: bios.owner.hostname,
        });
        expect(biosFiles.some((request) => request.url.includes('grub'))).toBe(false);
        const biosSerial = await bios.machine.readSerial();
        expect(biosSerial).toContain(`E2E-LOOKUP ok node=${bios.uuid}`);
        expect(biosSerial).not.toMatch(/E2E-FAILED|E2E-WARN/);
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'an unknown UEFI machine gets the GRUB fallback and nothing else',
      async ({ expect }) => {
        const { lab } = suite;
        const mac = '52:54:00:e3:f1:21';
        const machine = await lab.addMachine('stranger-uefi', mac, { firmware: 'uefi' });
        const events = await machine.qmp();
        await events.cont(); // no node, so nothing in the product will power it on
        await machine.waitForSerial(/bmaas: no boot configuration for \S+: the GRUB fallback/, BOOT_TIMEOUT_MS);
        await machine.stop(); // it would reboot and try again, as a real machine does

        const ip = await (lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
        const path = `/v1/boot/${mac}/grub.cfg`;
        const refusals = lab.stack.api.lines.filter(
          (line) =>
            typeof line.message === 'string' && line.message.startsWith('boot config refused') && line.path === path,
        );
        // The root config tries the API a few times before its fallback: every try refused, as an unknown MAC.
        expect(refusals.length).toBeGreaterThanOrEqual(1);
        for (const refusal of refusals) expect(refusal).toMatchObject({ reason: 'unknown-mac', detail: mac });
        // (GRUB also asks for its optional files under /grub/, answered 404)
        const files = filesServedTo(lab.stack, ip);
        const urls = new Set(files.filter((request) => request.status === 200).map((request) => request.url));
        expect(urls).toEqual(new Set([`/${GRUB_EFI_FILE}`, '/grub/grub.cfg']));
        expect(files.every((request) => request.url.startsWith('/grub') || request.url === `/${GRUB_EFI_FILE}`)).toBe(
          true,
        );
        const serial = await machine.readSerial();
        expect(serial).not.toContain('E2E-RAMDISK');
        expect(serial).not.toContain('loading the deploy ramdisk');
      },
      TEST_TIMEOUT_MS,
    );
  },
);
