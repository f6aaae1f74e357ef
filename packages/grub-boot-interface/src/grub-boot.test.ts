// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is GRUB's own variable expansion, expected in the configs as is.
import { readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BootConfigNotFound, InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { createTestNode, createTestPort, createTestTask } from '@bmaas/driver-api/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { GrubBootInterface, grubBootInterface } from './grub-boot.js';
import { createGrubFixture, type GrubFixture } from './testing/grub-fixture.js';

describe('grub boot interface', () => {
  let fixture: GrubFixture | undefined;
  afterEach(async () => {
    await fixture?.cleanup();
    fixture = undefined;
  });

  async function setUp(driverInfo: Record<string, unknown> = {}, kernelAppendParams: string | null = null) {
    const made = await createGrubFixture({ settings: { kernel_append_params: kernelAppendParams } });
    fixture = made;
    const node = createTestNode({ bootInterface: 'grub', driverInfo: { ...made.driverInfo, ...driverInfo } });
    const ports = [createTestPort(node)];
    return { node, ports, iface: made.iface, root: made.httpRoot, task: () => createTestTask(node, ports) };
  }

  it('is registered as grub, with its root config, the name it serves and its text files', () => {
    expect(grubBootInterface.name).toBe('grub');
    expect(grubBootInterface.rootFiles).toEqual(['grub/grub.cfg']);
    expect(grubBootInterface.bootConfigNames).toEqual(['grub.cfg']);
    expect(grubBootInterface.textFiles).toEqual(['.cfg']);
    expect(grubBootInterface.config?.section).toBe('grub');
    expect(grubBootInterface.config?.fallbacks).toEqual({ kernel_append_params: 'pxe' });
  });

  it("writes a root config that asks the API for the machine's grub.cfg, then falls back", async () => {
    const { iface, root } = await setUp();
    await iface.prepareHttpRoot();
    const config = await readFile(join(root, 'grub', 'grub.cfg'), 'utf8');
    expect(config).toContain('configfile (http,192.0.2.1:6385)/v1/boot/${bmaas_mac}/grub.cfg\n');
    expect(config).toContain('set bmaas_mac="${net_default_mac}"\n');
    expect(config).toMatch(
      /echo "bmaas: no boot configuration for \$\{bmaas_mac\}: the GRUB fallback, rebooting"\nsleep 10\nreboot\n$/,
    );
  });

  it('prepares a deploy ramdisk: images, then a grub.cfg loading them from this conductor', async () => {
    const { node, iface, root, task } = await setUp({ kernel_append_params: 'console=ttyS0 quiet panic=1' });
    await iface.prepareRamdisk(task(), 'deploy');
    expect((await readdir(join(root, node.uuid))).sort()).toEqual(['deploy_kernel', 'deploy_ramdisk', 'grub.cfg']);
    const config = await iface.getBootConfig(createTestTask(node, [], { shared: true }), 'grub.cfg');
    expect(config).toContain(
      `linux (http,192.0.2.10:8080)/${node.uuid}/deploy_kernel console=ttyS0 quiet panic=1 BOOTIF=\${bmaas_mac} ipa-api-url=http://192.0.2.1:6385\n`,
    );
    expect(config).toContain(`initrd (http,192.0.2.10:8080)/${node.uuid}/deploy_ramdisk\nboot\n`);
  });

  it('gives the ramdisk its [grub]kernel_append_params when driver_info names none, else the built-in default', async () => {
    const configured = await setUp({}, 'console=ttyS0');
    await configured.iface.prepareRamdisk(configured.task(), 'rescue');
    const rescue = await configured.iface.getBootConfig(
      createTestTask(configured.node, [], { shared: true }),
      'grub.cfg',
    );
    expect(rescue).toContain('/rescue_kernel console=ttyS0 BOOTIF=');
    await fixture?.cleanup();
    const plain = await setUp();
    await plain.iface.prepareRamdisk(plain.task(), 'deploy');
    const deploy = await plain.iface.getBootConfig(createTestTask(plain.node, [], { shared: true }), 'grub.cfg');
    expect(deploy).toContain('/deploy_kernel nofb vga=normal BOOTIF=');
  });

  it('boots the instance by leaving GRUB, keeping the config until cleanUpInstance', async () => {
    const { node, iface, root, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    await iface.prepareInstance(task());
    expect(await readdir(join(root, node.uuid))).toEqual(['grub.cfg']);
    const config = await iface.getBootConfig(createTestTask(node, [], { shared: true }), 'grub.cfg');
    expect(config).toMatch(/\nexit\n$/);
    await iface.cleanUpRamdisk(task());
    expect(await readdir(join(root, node.uuid))).toEqual(['grub.cfg']);
    await iface.cleanUpInstance(task());
    expect(await readdir(root)).toEqual([]);
  });

  it.each([
    ['kernel parameters that are GRUB script', { kernel_append_params: 'quiet; reboot' }, InvalidParameterValue],
    ['kernel parameters on two lines', { kernel_append_params: 'quiet\nreboot' }, InvalidParameterValue],
    ['a variable in the kernel parameters', { kernel_append_params: 'root=${x}' }, InvalidParameterValue],
    ['no deploy images', { deploy_kernel: '', deploy_ramdisk: '' }, MissingParameterValue],
    ['an image under /etc', { deploy_kernel: '/etc/passwd' }, InvalidParameterValue],
  ])('refuses %s at validate, writing nothing', async (_what, driverInfo, error) => {
    const { node, ports, iface, root } = await setUp(driverInfo);
    await expect(iface.validate(createTestTask(node, ports, { shared: true }))).rejects.toBeInstanceOf(error);
    await expect(iface.prepareRamdisk(createTestTask(node, ports), 'deploy')).rejects.toBeInstanceOf(error);
    expect(await readdir(root).catch(() => 'absent')).toBe('absent');
  });

  it('refuses what GRUB cannot fetch: an https http_url or API, an unset API endpoint', async () => {
    for (const deps of [
      { deploy: { http_url: 'https://192.0.2.10:8443' } },
      { apiPublicEndpoint: 'https://192.0.2.1:6385' },
      { apiPublicEndpoint: null },
    ]) {
      const other = await createGrubFixture(deps);
      const node = createTestNode({ bootInterface: 'grub', driverInfo: other.driverInfo });
      await expect(
        other.iface.validate(createTestTask(node, [], { shared: true })),
        JSON.stringify(deps),
      ).rejects.toThrow(/GRUB|public_endpoint/);
      await other.cleanup();
    }
  });

  it('reads the node config without following a link planted in its place', async () => {
    const { node, iface, root, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    const secret = join(root, '..', 'secret');
    await writeFile(secret, 'not a config\n');
    await rm(join(root, node.uuid, 'grub.cfg'));
    await symlink(secret, join(root, node.uuid, 'grub.cfg'));
    await expect(iface.getBootConfig(createTestTask(node, [], { shared: true }), 'grub.cfg')).rejects.toBeInstanceOf(
      BootConfigNotFound,
    );
  });

  it('is created by its descriptor from the deps the registry gives', async () => {
    fixture = await createGrubFixture();
    expect(grubBootInterface.create(fixture.deps)).toBeInstanceOf(GrubBootInterface);
  });
});

describe('grub discovery config', () => {
  const discovery = {
    enabled: true,
    driver: 'fake-hardware',
    interfaces: [],
    deploy_kernel: 'http://192.0.2.9:8080/ipa.kernel',
    deploy_ramdisk: 'http://192.0.2.9:8080/ipa.initramfs',
    kernel_append_params: 'console=ttyS0',
    name_template: null,
  };

  it('boots the inspection ramdisk for grub.cfg with discovery on, and refuses every other name', async () => {
    const made = await createGrubFixture({ discovery });
    try {
      const config = await made.iface.getDiscoveryConfig('grub.cfg');
      expect(config).toContain(
        'linux (http,192.0.2.9:8080)/ipa.kernel console=ttyS0 BOOTIF=${bmaas_mac} ipa-api-url=http://192.0.2.1:6385 ipa-inspection-callback-url=http://192.0.2.1:6385/v1/continue_inspection\n',
      );
      expect(config).toContain('initrd (http,192.0.2.9:8080)/ipa.initramfs\nboot\n');
      await expect(made.iface.getDiscoveryConfig('discovery.ipxe')).rejects.toBeInstanceOf(BootConfigNotFound);
    } finally {
      await made.cleanup();
    }
  });

  it('serves nothing with discovery off', async () => {
    const made = await createGrubFixture({ discovery: { ...discovery, enabled: false } });
    try {
      await expect(made.iface.getDiscoveryConfig('grub.cfg')).rejects.toBeInstanceOf(BootConfigNotFound);
    } finally {
      await made.cleanup();
    }
  });
});
