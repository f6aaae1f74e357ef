import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AGENT_TOKEN_KEY } from '@bmaas/agent-client';
import { InvalidParameterValue, MissingParameterValue, type NodeRecord, ProvisionState } from '@bmaas/common';
import { FAKE_VMEDIA_KEY, NoopManagementInterface } from '@bmaas/driver-api';
import { createTestNode, createTestPort, createTestTask } from '@bmaas/driver-api/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createVmediaFixture, type VmediaFixture } from './testing/vmedia-fixture.js';

const run = promisify(execFile);

const NETWORK_DATA = {
  links: [{ id: 'port0', type: 'phy', ethernet_mac_address: '52:54:00:12:34:56', mtu: 1500 }],
  networks: [
    {
      id: 'provisioning',
      type: 'ipv4',
      link: 'port0',
      ip_address: '192.0.2.50',
      netmask: '255.255.255.0',
      routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '192.0.2.1' }],
    },
  ],
  services: [{ type: 'dns', address: '192.0.2.53' }],
};

/** What xorriso reads back from an ISO: its files, El Torito boot records and volume id. */
async function inspectIso(iso: string) {
  const found = await run('xorriso', ['-indev', iso, '-find', '/', '-type', 'f']);
  const files = [...found.stdout.matchAll(/^'(.*)'$/gm)].map((match) => match[1] as string).sort();
  const torito = await run('xorriso', ['-indev', iso, '-report_el_torito', 'plain']);
  const platforms = [...torito.stdout.matchAll(/^El Torito boot img : +\d+ +(\S+)/gm)].map((m) => m[1]);
  const pvd = await run('xorriso', ['-indev', iso, '-pvd_info']);
  const volumeId = /^Volume Id +: (.*)$/m.exec(pvd.stdout)?.[1]?.trim();
  return { files, platforms, volumeId };
}

/** One file of the ISO, extracted by xorriso. */
async function isoFile(iso: string, path: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'bmaas-vmedia-read-'));
  try {
    await run('xorriso', ['-osirrox', 'on', '-indev', iso, '-extract', path, join(dir, 'out')]);
    return await readFile(join(dir, 'out'), 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('redfish-virtual-media boot interface', () => {
  let fixture: VmediaFixture;
  let node: NodeRecord;
  const ports = () => [
    createTestPort(node, { address: '52:54:00:AB:CD:01', pxeEnabled: false }),
    createTestPort(node, { address: '52:54:00:AB:CD:02' }),
  ];
  const task = (overrides: Parameters<typeof createTestTask>[2] = {}) => createTestTask(node, ports(), overrides);
  const inserted = (): Record<string, string> =>
    (node.driverInternalInfo[FAKE_VMEDIA_KEY] as Record<string, string> | undefined) ?? {};
  const nodeFiles = () => readdir(join(fixture.httpRoot, node.uuid)).catch(() => [] as string[]);
  const isoPath = () => {
    const url = inserted().cdrom;
    expect(url).toMatch(new RegExp(`^http://192\\.0\\.2\\.10:8080/${node.uuid}/boot-[0-9a-f]{32}\\.iso$`));
    return join(fixture.httpRoot, node.uuid, (url as string).split('/').pop() as string);
  };

  beforeEach(async () => {
    fixture = await createVmediaFixture();
    node = createTestNode({ bootInterface: 'redfish-virtual-media', driverInfo: fixture.driverInfo });
  });
  afterEach(async () => {
    await fixture.cleanup();
  });

  it('sets the boot device to the CD, once, after inserting the ISO (the deploy leaves it)', async () => {
    expect(fixture.iface.setsBootDevice).toBe(true);
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    expect(inserted().cdrom).toBeDefined();
    expect(node.driverInternalInfo.fake_boot_device).toEqual({ device: 'cdrom', persistent: false });
  });

  it('builds a hybrid ISO (BIOS isolinux and UEFI GRUB) with the ramdisk, its command line and network_data as config-2', async () => {
    node.networkData = NETWORK_DATA;
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    const iso = isoPath();
    const { files, platforms, volumeId } = await inspectIso(iso);
    expect(files).toEqual([
      '/boot/grub/bmaas-vmedia.cfg',
      '/boot/grub/efiboot.img',
      '/initrd',
      '/isolinux/isolinux.bin',
      '/isolinux/isolinux.cfg',
      '/isolinux/ldlinux.c32',
      '/openstack/latest/network_data.json',
      '/vmlinuz',
    ]);
    expect(platforms).toEqual(['BIOS', 'UEFI']);
    expect(volumeId).toBe('config-2');
    expect(await isoFile(iso, '/vmlinuz')).toBe('deploy_kernel bytes');
    expect(await isoFile(iso, '/initrd')).toBe('deploy_ramdisk bytes');
    expect(JSON.parse(await isoFile(iso, '/openstack/latest/network_data.json'))).toEqual(NETWORK_DATA);

    const token = node.driverInternalInfo[AGENT_TOKEN_KEY];
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const words = `nofb nomodeset vga=normal ipa-api-url=http://192.0.2.1:6385 BOOTIF=52:54:00:ab:cd:02 ipa-agent-token=${token} boot_method=vmedia`;
    expect(await isoFile(iso, '/isolinux/isolinux.cfg')).toContain(`APPEND initrd=/initrd ${words}\n`);
    expect(await isoFile(iso, '/boot/grub/bmaas-vmedia.cfg')).toContain(`linux /vmlinuz ${words}\n`);

    // The EFI system partition holds GRUB where UEFI firmware looks for a removable medium's loader.
    const dir = await mkdtemp(join(tmpdir(), 'bmaas-vmedia-esp-'));
    try {
      await run('xorriso', ['-osirrox', 'on', '-indev', iso, '-extract', '/boot/grub/efiboot.img', join(dir, 'esp')]);
      const listing = await run('mdir', ['-i', join(dir, 'esp'), '-b', '::/EFI/BOOT'], {
        env: { ...process.env, MTOOLS_SKIP_CHECK: '1' },
      });
      expect(listing.stdout).toContain('::/EFI/BOOT/BOOTX64.EFI');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('labels the ISO VMEDIA_BOOT_ISO and carries no config drive without network_data; inspection gets its callback', async () => {
    node.provisionState = ProvisionState.INSPECTING;
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    const iso = isoPath();
    const { files, volumeId } = await inspectIso(iso);
    expect(volumeId).toBe('VMEDIA_BOOT_ISO');
    expect(files.some((file) => file.startsWith('/openstack'))).toBe(false);
    expect(await isoFile(iso, '/isolinux/isolinux.cfg')).toContain(
      ' boot_method=vmedia ipa-inspection-callback-url=http://192.0.2.1:6385/v1/continue_inspection\n',
    );
  });

  it('keeps the ISO and token when nothing changed, rebuilds under a new name when network_data did, and the rescue ISO replaces the deploy one', async () => {
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    const first = isoPath();
    const token = node.driverInternalInfo[AGENT_TOKEN_KEY];
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    expect(isoPath()).toBe(first);
    expect(node.driverInternalInfo[AGENT_TOKEN_KEY]).toBe(token);

    node.networkData = NETWORK_DATA;
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    const second = isoPath();
    expect(second).not.toBe(first);
    expect((await nodeFiles()).filter((name) => name.endsWith('.iso'))).toEqual([second.split('/').pop()]);

    await fixture.iface.prepareRamdisk(task(), 'rescue');
    const rescue = isoPath();
    expect(await isoFile(rescue, '/vmlinuz')).toBe('rescue_kernel bytes');
    expect((await nodeFiles()).sort()).toEqual([rescue.split('/').pop(), 'rescue_kernel', 'rescue_ramdisk'].sort());
  });

  it('ejects the CD and deletes the ISO when the ramdisk is no longer needed, and when the instance boots', async () => {
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    expect(await nodeFiles()).not.toEqual([]);
    await fixture.iface.cleanUpRamdisk(task());
    expect(inserted()).toEqual({});
    expect(await nodeFiles()).toEqual([]);

    await fixture.iface.prepareRamdisk(task(), 'deploy');
    await fixture.iface.prepareInstance(task());
    expect(inserted()).toEqual({});
    expect(await nodeFiles()).toEqual([]);
  });

  it('inserts a prebuilt deploy_iso: placed under http_root (local), or its own URL (http), with no token issued', async () => {
    const prebuilt = join(fixture.imagesDir, 'prebuilt.iso');
    await writeFile(prebuilt, 'an ISO');
    node.driverInfo = { deploy_iso: prebuilt };
    await fixture.iface.validate(task({ shared: true }));
    await fixture.iface.prepareRamdisk(task(), 'deploy');
    expect(inserted().cdrom).toBe(`http://192.0.2.10:8080/${node.uuid}/deploy.iso`);
    expect(await readFile(join(fixture.httpRoot, node.uuid, 'deploy.iso'), 'utf8')).toBe('an ISO');
    expect(node.driverInternalInfo[AGENT_TOKEN_KEY]).toBeUndefined();

    // Fetched by the BMC from its origin: the conductor neither downloads nor serves it.
    const http = await createVmediaFixture({ coreSettings: { deploy: { ramdisk_image_download_source: 'http' } } });
    try {
      node.driverInfo = { deploy_iso: 'http://192.0.2.20/images/ramdisk.iso' };
      await http.iface.prepareRamdisk(task(), 'deploy');
      expect(inserted().cdrom).toBe('http://192.0.2.20/images/ramdisk.iso');
      expect(await readdir(http.httpRoot).catch(() => [])).toEqual([]);
    } finally {
      await http.cleanup();
    }
  });

  it('gives the BMC the ISO at [deploy]external_http_url, or driver_info.external_http_url, when set', async () => {
    const external = await createVmediaFixture({
      coreSettings: { deploy: { external_http_url: 'http://198.51.100.7:8080/' } },
    });
    try {
      node.driverInfo = external.driverInfo;
      await external.iface.prepareRamdisk(task(), 'deploy');
      expect(inserted().cdrom).toMatch(
        new RegExp(`^http://198\\.51\\.100\\.7:8080/${node.uuid}/boot-[0-9a-f]{32}\\.iso$`),
      );
      node.driverInfo = { ...external.driverInfo, external_http_url: 'https://bmc-net.example:8443' };
      await external.iface.prepareRamdisk(task(), 'deploy');
      expect(inserted().cdrom).toMatch(new RegExp(`^https://bmc-net\\.example:8443/${node.uuid}/boot-`));
      node.driverInfo = { ...external.driverInfo, external_http_url: 'http://x y' };
      await expect(external.iface.validate(task({ shared: true }))).rejects.toBeInstanceOf(InvalidParameterValue);
    } finally {
      await external.cleanup();
    }
  });

  it('validate refuses a management interface without virtual media, an unset http_url or API, bad kernel parameters and missing images', async () => {
    await expect(
      fixture.iface.validate(task({ shared: true, driver: { management: new NoopManagementInterface() } })),
    ).rejects.toThrow(/has no virtual media/);
    node.driverInfo = { ...fixture.driverInfo, kernel_append_params: 'console=ttyS0\ninitrd=/evil' };
    await expect(fixture.iface.validate(task({ shared: true }))).rejects.toBeInstanceOf(InvalidParameterValue);
    node.driverInfo = { rescue_kernel: fixture.driverInfo.rescue_kernel as string };
    await expect(fixture.iface.validate(task({ shared: true }))).rejects.toThrow(
      /deploy_kernel and deploy_ramdisk, or deploy_iso/,
    );

    const noUrl = await createVmediaFixture({ deploy: { http_url: null } });
    const noApi = await createVmediaFixture({ apiPublicEndpoint: null });
    try {
      node.driverInfo = noUrl.driverInfo;
      await expect(noUrl.iface.validate(task({ shared: true }))).rejects.toBeInstanceOf(MissingParameterValue);
      node.driverInfo = noApi.driverInfo;
      await expect(noApi.iface.validate(task({ shared: true }))).rejects.toThrow(/public_endpoint/);
    } finally {
      await noUrl.cleanup();
      await noApi.cleanup();
    }
  });
});
