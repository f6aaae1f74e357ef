// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is iPXE's own setting expansion, expected in the scripts as is.
import { readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  BootConfigNotFound,
  createSilentLogger,
  InvalidParameterValue,
  MissingParameterValue,
  type PortRecord,
} from '@bmaas/common';
import { createTestNode, createTestPort, createTestTask } from '@bmaas/driver-api/testing';
import { type ImageServer, startImageServer } from '@bmaas/http-root/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IpxeBootInterface, ipxeBootInterface, writeRootBootScript } from './ipxe-boot.js';
import { renderRootBootScript } from './root-script.js';
import { createIpxeFixture, type IpxeFixture } from './testing/ipxe-fixture.js';
import { testDeps } from './testing/test-config.js';

describe('ipxe boot interface', () => {
  let fixture: IpxeFixture;
  afterEach(() => fixture.cleanup());

  const setUp = async (overrides: Parameters<typeof createIpxeFixture>[0] = {}) => {
    fixture = await createIpxeFixture(overrides);
    const node = createTestNode({ bootInterface: 'ipxe', driverInfo: fixture.driverInfo });
    const ports = [
      createTestPort(node, { address: '52:54:00:00:00:01' }),
      createTestPort(node, { address: '52:54:00:00:00:02' }),
      createTestPort(node, { address: '52:54:00:00:00:03', pxeEnabled: false }),
    ];
    return { node, ports, iface: fixture.iface, task: () => createTestTask(node, ports) };
  };
  const at = (...parts: string[]) => join(fixture.httpRoot, ...parts);
  const files = async (...parts: string[]) => (await readdir(at(...parts))).sort();

  it('lays out the node script, images, MAC links and root script', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');

    expect(await files()).toEqual([node.uuid, 'boot.ipxe', 'pxelinux.cfg'].sort());
    expect(await files(node.uuid)).toEqual(['config', 'deploy_kernel', 'deploy_ramdisk']);
    expect(await readFile(at(node.uuid, 'deploy_kernel'), 'utf8')).toBe('deploy_kernel bytes');
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-01', '52-54-00-00-00-02']);
    for (const link of await files('pxelinux.cfg')) {
      const target = await readlink(at('pxelinux.cfg', link));
      expect(target).toBe(`../${node.uuid}/config`);
      expect(resolve(dirname(at('pxelinux.cfg', link)), target)).toBe(at(node.uuid, 'config'));
      expect(await readFile(at('pxelinux.cfg', link), 'utf8')).toContain('goto deploy\n');
    }
    expect(await readFile(at('boot.ipxe'), 'utf8')).toBe(renderRootBootScript(fixture.config));
  });

  it('serves the script on disk as boot.ipxe', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    const shared = createTestTask(node, [], { shared: true });
    expect(await iface.getBootConfig(shared, 'boot.ipxe')).toBe(await readFile(at(node.uuid, 'config'), 'utf8'));
    await writeFile(at(node.uuid, 'config'), '#!ipxe\necho edited\n');
    expect(await iface.getBootConfig(shared, 'boot.ipxe')).toBe('#!ipxe\necho edited\n');
    await expect(iface.getBootConfig(shared, 'config')).rejects.toBeInstanceOf(BootConfigNotFound);
  });

  it('follows no symbolic link planted in place of the script or its directory, as the file server', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    const shared = createTestTask(node, [], { shared: true });
    const secret = join(fixture.httpRoot, '..', 'secret');
    await writeFile(secret, 'root:x:0:0::/root:/bin/sh\n');
    await rm(at(node.uuid, 'config'));
    await symlink(secret, at(node.uuid, 'config'));
    await expect(iface.getBootConfig(shared, 'boot.ipxe')).rejects.toBeInstanceOf(BootConfigNotFound);

    const elsewhere = join(fixture.httpRoot, '..', 'elsewhere');
    await rename(join(fixture.httpRoot, node.uuid), elsewhere);
    await writeFile(join(elsewhere, 'config'), '#!ipxe\necho planted\n');
    await symlink(elsewhere, join(fixture.httpRoot, node.uuid));
    await expect(iface.getBootConfig(shared, 'boot.ipxe')).rejects.toBeInstanceOf(BootConfigNotFound);
  });

  it('repairs a node directory left behind: other images go, an edited script is written again', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'rescue');
    await writeFile(at(node.uuid, 'config'), '#!ipxe\necho edited\n');
    await writeFile(at(node.uuid, '.rescue_kernel.source.json'), '{}\n');
    await iface.prepareRamdisk(task(), 'deploy');
    expect(await files(node.uuid)).toEqual(['config', 'deploy_kernel', 'deploy_ramdisk']);
    expect(await readFile(at(node.uuid, 'config'), 'utf8')).toContain('goto deploy\n');
  });

  it('replaces a MAC link made behind its back and makes pxelinux.cfg again when it was removed', async () => {
    const { node, ports, iface } = await setUp();
    const other = createTestNode({ bootInterface: 'ipxe', driverInfo: fixture.driverInfo });
    await iface.prepareRamdisk(
      createTestTask(other, [createTestPort(other, { address: '52:54:00:00:00:09' })]),
      'deploy',
    );
    await symlink('../somewhere/config', at('pxelinux.cfg', '52-54-00-00-00-01'));
    await iface.prepareRamdisk(createTestTask(node, ports), 'deploy');
    expect(await readlink(at('pxelinux.cfg', '52-54-00-00-00-01'))).toBe(`../${node.uuid}/config`);

    await rm(at('pxelinux.cfg'), { recursive: true });
    await iface.cleanUpRamdisk(createTestTask(node, ports));
    await iface.prepareRamdisk(createTestTask(node, ports), 'deploy');
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-01', '52-54-00-00-00-02']);
    expect(await readlink(at('pxelinux.cfg', '52-54-00-00-00-02'))).toBe(`../${node.uuid}/config`);
  });

  it('switches images and script between deploy and rescue', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    await iface.prepareRamdisk(task(), 'rescue');
    expect(await files(node.uuid)).toEqual(['config', 'rescue_kernel', 'rescue_ramdisk']);
    const script = await readFile(at(node.uuid, 'config'), 'utf8');
    expect(script).toContain('goto rescue\n');
    expect(script).toContain(`http://192.0.2.10:8080/${node.uuid}/rescue_kernel `);
  });

  it('boots the instance through the same links, without images', async () => {
    const { node, iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    await iface.prepareInstance(task());
    expect(await files(node.uuid)).toEqual(['config']);
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-01', '52-54-00-00-00-02']);
    expect(await readFile(at('pxelinux.cfg', '52-54-00-00-00-01'), 'utf8')).toContain('goto boot_instance\n');

    // A ramdisk clean-up after the switch leaves the instance's boot alone.
    await iface.cleanUpRamdisk(task());
    expect(await files(node.uuid)).toEqual(['config']);
    expect(await files('pxelinux.cfg')).toHaveLength(2);

    await iface.cleanUpInstance(task());
    expect(await files()).toEqual(['boot.ipxe', 'pxelinux.cfg']);
    expect(await files('pxelinux.cfg')).toEqual([]);
  });

  it('cleans up only its own node and MACs', async () => {
    const first = await setUp();
    const second = createTestNode({ bootInterface: 'ipxe', driverInfo: fixture.driverInfo });
    const secondPorts = [createTestPort(second, { address: '52:54:00:00:00:09' })];
    await first.iface.prepareRamdisk(first.task(), 'deploy');
    await first.iface.prepareRamdisk(createTestTask(second, secondPorts), 'deploy');

    await first.iface.cleanUpRamdisk(first.task());
    expect(await files()).toEqual([second.uuid, 'boot.ipxe', 'pxelinux.cfg'].sort());
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-09']);
  });

  it('drops links of ports that left or stopped PXE booting, but not a MAC now owned by another node', async () => {
    const { node, ports, iface } = await setUp();
    await iface.prepareRamdisk(createTestTask(node, ports), 'deploy');
    const [kept, stopped] = ports as [PortRecord, PortRecord];
    const remaining = [kept, { ...stopped, pxeEnabled: false }];
    await iface.prepareRamdisk(createTestTask(node, remaining), 'deploy');
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-01']);

    const other = createTestNode({ bootInterface: 'ipxe', driverInfo: fixture.driverInfo });
    await iface.prepareRamdisk(
      createTestTask(other, [createTestPort(other, { address: '52:54:00:00:00:01' })]),
      'deploy',
    );
    await iface.cleanUpInstance(createTestTask(node, remaining));
    expect(await readlink(at('pxelinux.cfg', '52-54-00-00-00-01'))).toBe(`../${other.uuid}/config`);
  });

  it('drops links of a removed port made before it started (a restarted conductor), reading no other node', async () => {
    const { node, ports, iface } = await setUp();
    await iface.prepareRamdisk(createTestTask(node, ports), 'deploy');
    const restarted = new IpxeBootInterface(testDeps(fixture.config));
    const [kept] = ports as [PortRecord, PortRecord];
    await restarted.prepareRamdisk(createTestTask(node, [kept]), 'deploy');
    expect(await files('pxelinux.cfg')).toEqual(['52-54-00-00-00-01']);

    // A link another process made for one of the node's ports is found at clean-up too.
    await symlink(`../${node.uuid}/config`, at('pxelinux.cfg', '52-54-00-00-00-02'));
    await restarted.cleanUpInstance(createTestTask(node, ports));
    expect(await files('pxelinux.cfg')).toEqual([]);
  });

  it('rewrites the root script only when its content changes', async () => {
    const { iface, task } = await setUp();
    await iface.prepareRamdisk(task(), 'deploy');
    const written = await stat(at('boot.ipxe'));
    await iface.prepareRamdisk(task(), 'deploy');
    await iface.prepareInstance(task());
    expect((await stat(at('boot.ipxe'))).ino).toBe(written.ino);

    const apiConfig = { ...fixture.config, pxe: { ...fixture.config.pxe, ipxe_use_boot_config_api: true } };
    expect(await writeRootBootScript(apiConfig)).toBe(true);
    expect(await writeRootBootScript(apiConfig)).toBe(false);
    expect(await readFile(at('boot.ipxe'), 'utf8')).toContain(
      'http://192.0.2.1:6385/v1/boot/${net${nic}/mac:hexhyp}/boot.ipxe',
    );
  });

  it('validates driver_info and the configuration without writing anything', async () => {
    const { node, ports, iface } = await setUp();
    const check = (driverInfo: Record<string, unknown>, on = iface) =>
      on.validate(createTestTask({ ...node, driverInfo }, ports, { shared: true }));

    await check(fixture.driverInfo);
    await expect(check({})).rejects.toThrow(
      /missing the following parameters in driver_info: deploy_kernel, deploy_ramdisk/,
    );
    await expect(check({ ...fixture.driverInfo, deploy_ramdisk: '' })).rejects.toBeInstanceOf(MissingParameterValue);
    await expect(check({ ...fixture.driverInfo, deploy_kernel: 'glance-image-id' })).rejects.toBeInstanceOf(
      InvalidParameterValue,
    );
    const { deploy_kernel, deploy_ramdisk } = fixture.driverInfo;
    await expect(check({ deploy_kernel, deploy_ramdisk, rescue_kernel: deploy_kernel })).rejects.toThrow(
      /rescue_ramdisk/,
    );

    const noApi = new IpxeBootInterface({
      settings: fixture.config.pxe,
      coreSettings: {},
      deploy: fixture.config.deploy,
      discovery: fixture.config.discovery,
      apiPublicEndpoint: null,
      inspectionCallbackEndpoint: null,
      fileUrlAllowedPaths: fixture.config.conductor.file_url_allowed_paths,
      powerStateChangeTimeout: 60,
      logger: createSilentLogger(),
      conductorHostname: 'c',
    });
    await expect(check(fixture.driverInfo, noApi)).rejects.toThrow(/\[api\]public_endpoint/);
    expect(await readdir(fixture.httpRoot).catch(() => 'absent')).toBe('absent');
  });

  it.each([['/etc/passwd'], ['file:///etc/shadow']])(
    'refuses %s as an image at validate and deploy time, publishing nothing',
    async (image) => {
      const { node, ports, iface } = await setUp();
      const planted = { ...node, driverInfo: { ...fixture.driverInfo, deploy_kernel: image } };
      await expect(iface.validate(createTestTask(planted, ports, { shared: true }))).rejects.toThrow(
        /driver_info.deploy_kernel: .*(system directory|file_url_allowed_paths)/,
      );
      await expect(iface.prepareRamdisk(createTestTask(planted, ports), 'deploy')).rejects.toBeInstanceOf(
        InvalidParameterValue,
      );
      expect(await readdir(fixture.httpRoot).catch(() => 'absent')).toBe('absent');
    },
  );

  it('refuses a local image outside [conductor]file_url_allowed_paths, even behind a symbolic link', async () => {
    const { node, ports, iface } = await setUp();
    const outside = join(fixture.httpRoot, '..', 'outside.img');
    await writeFile(outside, 'not an image');
    const inside = join(dirname(fixture.driverInfo.deploy_kernel as string), 'link.img');
    await symlink(outside, inside);
    for (const image of [outside, inside]) {
      const task = createTestTask({ ...node, driverInfo: { ...fixture.driverInfo, deploy_ramdisk: image } }, ports);
      await expect(iface.validate(task)).rejects.toThrow(/is not under \[conductor\]file_url_allowed_paths/);
      await expect(iface.prepareRamdisk(task, 'deploy')).rejects.toBeInstanceOf(InvalidParameterValue);
    }
    expect(await readdir(fixture.httpRoot).catch(() => 'absent')).toBe('absent');
  });

  it('refuses to prepare a ramdisk whose images are not set, writing nothing', async () => {
    const { node, ports, iface } = await setUp();
    const { rescue_kernel: _, ...withoutRescue } = fixture.driverInfo;
    await expect(
      iface.prepareRamdisk(createTestTask({ ...node, driverInfo: withoutRescue }, ports), 'rescue'),
    ).rejects.toBeInstanceOf(MissingParameterValue);
    expect(await readdir(fixture.httpRoot).catch(() => 'absent')).toBe('absent');
  });

  it('is registered as ipxe', async () => {
    fixture = await createIpxeFixture();
    expect(ipxeBootInterface.name).toBe('ipxe');
    const created = ipxeBootInterface.create(testDeps(fixture.config));
    expect(created).toBeInstanceOf(IpxeBootInterface);
    expect(ipxeBootInterface.config?.section).toBe('pxe');
    expect(ipxeBootInterface.rootFiles).toEqual(['boot.ipxe']);
    expect(ipxeBootInterface.bootConfigNames).toEqual(['boot.ipxe']);
  });
});

describe('ipxe boot interface with images over HTTP', () => {
  let server: ImageServer;
  let fixture: IpxeFixture;
  beforeAll(async () => {
    server = await startImageServer();
  });
  afterAll(() => server.close());
  afterEach(() => fixture.cleanup());

  it('downloads the images from a loopback server once', async () => {
    fixture = await createIpxeFixture();
    server.images.set('/ipa.kernel', { body: Buffer.from('http kernel'), etag: '"k1"' });
    server.images.set('/ipa.initramfs', { body: Buffer.from('http ramdisk') });
    const node = createTestNode({
      bootInterface: 'ipxe',
      driverInfo: { deploy_kernel: `${server.url}/ipa.kernel`, deploy_ramdisk: `${server.url}/ipa.initramfs` },
    });
    const ports = [createTestPort(node)];

    await fixture.iface.prepareRamdisk(createTestTask(node, ports), 'deploy');
    await fixture.iface.prepareRamdisk(createTestTask(node, ports), 'deploy');

    expect(await readFile(join(fixture.httpRoot, node.uuid, 'deploy_kernel'), 'utf8')).toBe('http kernel');
    expect(await readFile(join(fixture.httpRoot, node.uuid, 'deploy_ramdisk'), 'utf8')).toBe('http ramdisk');
    expect(server.requests.map((r) => `${r.path} ${r.ifNoneMatch ?? '-'}`)).toEqual([
      '/ipa.kernel -',
      '/ipa.initramfs -',
      '/ipa.kernel "k1"',
      '/ipa.initramfs -',
    ]);
  });
});
