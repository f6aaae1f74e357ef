import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { InvalidParameterValue, type NodeRecord, type PortRecord } from '@bmaas/common';
import { createTestNode, createTestPort, createTestTask } from '@bmaas/driver-api/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { BOOT_ARTEFACT_NAME, redfishHttpsBootInterface } from './redfish-https-boot.js';
import {
  API_URL,
  createRedfishHttpsFixture,
  HTTP_URL,
  type RedfishHttpsFixture,
} from './testing/redfish-https-fixture.js';
import { buildUnifiedKernelImage, cmdlineOf, peChecksumOf, UKI_STUB } from './unified-kernel-image.js';

const execFileAsync = promisify(execFile);
let fixture: RedfishHttpsFixture | undefined;
afterEach(async () => {
  await fixture?.cleanup();
  fixture = undefined;
});

function nodeOn(f: RedfishHttpsFixture, systemId: string, overrides: Partial<NodeRecord> = {}) {
  const node = createTestNode({
    driver: 'redfish',
    bootInterface: 'redfish-https',
    bootMode: 'uefi',
    driverInfo: f.driverInfoOf(systemId),
    ...overrides,
  });
  const ports: PortRecord[] = [createTestPort(node, { pxeEnabled: false }), createTestPort(node, { pxeEnabled: true })];
  return { node, ports, task: () => createTestTask(node, ports) };
}

/** The UKI's section `name`, as bytes (read through a file beside the fixture's images). */
async function sectionOf(uki: string, name: string): Promise<Buffer> {
  const out = join(fixture?.imagesDir ?? '.', `${name.slice(1)}.section`);
  await execFileAsync('objcopy', ['-O', 'binary', `--only-section=${name}`, uki, out]);
  return readFile(out);
}

describe.skipIf(!existsSync(UKI_STUB) && process.env.CI !== 'true')('redfish-https boot interface', () => {
  it('is a UEFI boot the redfish hardware type takes, setting the boot device itself', () => {
    expect(redfishHttpsBootInterface).toMatchObject({
      name: 'redfish-https',
      networkBoot: false,
      hardwareTypes: ['redfish'],
      bootConfigNames: [],
    });
  });

  it("builds each node's UKI of its mode's ramdisk and tells each node's BMC system its own URI, once", async () => {
    fixture = await createRedfishHttpsFixture(['node-1', 'node-2']);
    const f = fixture;
    const one = nodeOn(f, 'node-1');
    const two = nodeOn(f, 'node-2');
    await f.iface.prepareRamdisk(one.task(), 'deploy');
    await f.iface.prepareRamdisk(two.task(), 'rescue');

    for (const [{ node, ports }, system, mode] of [
      [one, 'node-1', 'deploy'],
      [two, 'node-2', 'rescue'],
    ] as const) {
      const override = f.bmc.control.system(system).bootOverride;
      expect(override).toEqual({
        target: 'UefiHttp',
        enabled: 'Once',
        mode: 'UEFI',
        httpBootUri: `${HTTP_URL}/${node.uuid}/${BOOT_ARTEFACT_NAME}`,
      });
      const uki = join(f.httpRoot, node.uuid, BOOT_ARTEFACT_NAME);
      const pxe = ports.find((p) => p.pxeEnabled)?.address.toLowerCase();
      expect(await cmdlineOf(uki, join(f.imagesDir, 'cmdline'))).toBe(
        `console=ttyS0 BOOTIF=${pxe} ipa-api-url=${API_URL}`,
      );
      expect((await sectionOf(uki, '.linux')).toString()).toBe(`${mode}_kernel bytes`);
      expect((await sectionOf(uki, '.initrd')).toString()).toBe(`${mode}_ramdisk bytes`);
    }

    // the machine boots it: a power on boots UefiHttp from that URI, then the override is spent
    const boot = await fetch(`${f.bmc.url}/redfish/v1/Systems/node-1/Actions/ComputerSystem.Reset`, {
      method: 'POST',
      headers: { Authorization: `Basic ${btoa(`${f.bmc.username}:${f.bmc.password}`)}` },
      body: JSON.stringify({ ResetType: 'On' }),
    });
    expect(boot.status).toBe(204);
    expect(f.bmc.control.system('node-1').bootOverride.target).toBe('None');
  });

  it('switches a node from the deploy to the rescue ramdisk, and removes every artefact at clean-up and for the instance', async () => {
    fixture = await createRedfishHttpsFixture();
    const f = fixture;
    const { node, task } = nodeOn(f, 'node-1');
    await f.iface.prepareRamdisk(task(), 'deploy');
    await f.iface.prepareRamdisk(task(), 'rescue');
    const uki = join(f.httpRoot, node.uuid, BOOT_ARTEFACT_NAME);
    expect((await sectionOf(uki, '.linux')).toString()).toBe('rescue_kernel bytes');
    expect((await readdir(join(f.httpRoot, node.uuid))).sort()).toEqual([
      BOOT_ARTEFACT_NAME,
      'rescue_kernel',
      'rescue_ramdisk',
    ]);
    await f.iface.prepareInstance(task());
    expect(existsSync(join(f.httpRoot, node.uuid, BOOT_ARTEFACT_NAME))).toBe(false);
    await f.iface.prepareRamdisk(task(), 'deploy');
    await f.iface.cleanUpRamdisk(task());
    expect(existsSync(join(f.httpRoot, node.uuid, BOOT_ARTEFACT_NAME))).toBe(false);
    expect(existsSync(join(f.httpRoot, node.uuid, 'deploy_kernel'))).toBe(false);
  });

  it('refuses a machine booting in bios mode, and a BMC that offers no UefiHttp', async () => {
    fixture = await createRedfishHttpsFixture(['node-1'], {
      bootSources: { bootSources: ['None', 'Pxe', 'Hdd'] },
    });
    const f = fixture;
    await expect(f.iface.validate(nodeOn(f, 'node-1', { bootMode: 'bios' }).task())).rejects.toThrow(
      /UEFI machines only/,
    );
    const { task } = nodeOn(f, 'node-1');
    await f.iface.validate(task());
    await expect(f.iface.prepareRamdisk(task(), 'deploy')).rejects.toBeInstanceOf(InvalidParameterValue);
  });

  it('refuses kernel parameters that could add to the command line', async () => {
    fixture = await createRedfishHttpsFixture();
    const f = fixture;
    const { task } = nodeOn(f, 'node-1', {
      driverInfo: { ...f.driverInfoOf('node-1'), kernel_append_params: 'quiet\ninit=/bin/sh' },
    });
    await expect(f.iface.validate(task())).rejects.toBeInstanceOf(InvalidParameterValue);
  });

  it("builds the same bytes from the same parts in a later second: the stub's stamp and a valid checksum", async () => {
    fixture = await createRedfishHttpsFixture();
    const f = fixture;
    const parts = {
      stub: UKI_STUB,
      kernel: f.driverInfo.deploy_kernel ?? '',
      initrd: f.driverInfo.deploy_ramdisk ?? '',
      cmdline: 'console=ttyS0',
    };
    const first = join(f.imagesDir, 'first.efi');
    const second = join(f.imagesDir, 'second.efi');
    await buildUnifiedKernelImage(parts, first, join(f.imagesDir, 'scratch'));
    await new Promise((resolve) => setTimeout(resolve, 1100)); // objcopy stamps whole seconds
    await buildUnifiedKernelImage(parts, second, join(f.imagesDir, 'scratch'));
    expect((await readFile(second)).equals(await readFile(first))).toBe(true);
    const stampOf = async (path: string) => {
      const bytes = await readFile(path);
      return bytes.readUInt32LE(bytes.readUInt32LE(0x3c) + 8);
    };
    expect(await stampOf(first)).toBe(await stampOf(UKI_STUB));
    const { stored, computed } = await peChecksumOf(first);
    expect(stored).toBe(computed);
    expect(stored).not.toBe(0);
  });
});
