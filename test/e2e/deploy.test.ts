// Real deploys: iPXE machines with a virtual disk boot the test agent (ipa-protocol.md §5)
// through the boot configuration API; the conductor drives it through the agent command
// API (write_image through deploy.execute_deploy_step), the agent downloads the instance
// image from the test host, verifies its hash, dd's it and the config drive to the disk,
// powers off; the machine then boots the disk (the active node's iPXE script sanboots it)
// and the instance reports its node uuid and config drive to the test host.
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createStores } from '@bmaas/db';
import type { QemuMachine } from '@bmaas/lab';
import {
  buildInstanceImage,
  type ImageServer,
  type InstanceImage,
  netnsUnavailableReason,
  startImageServer,
} from '@bmaas/lab';
import { afterAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { bootConfigServed, filesServedTo, nodeLines, uuidsOwnedByEach } from './lib/evidence.js';
import { E2E_CACHE_DIR, useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { nodeBodyFor, type ProductLab, startNetnsProductLab } from './lib/product-lab.js';

const LABEL = 'deploy';
/** Boot the ramdisk, write, power off, boot the disk: three machines at once on two busy emulating cores. */
const DEPLOY_TIMEOUT_MS = 480_000;
const TEST_TIMEOUT_MS = 720_000;
const ACTION_TIMEOUT_MS = 90_000;
/** [conductor]deploy_callback_timeout of this lab: long enough for a busy ramdisk boot, short for scenario 4. */
const CALLBACK_TIMEOUT_S = 180;
const DISK_BYTES = 128 * 1024 * 1024;
const QCOW2_PATH = '/images/instance.qcow2';
const HOSTILE_PATH = '/images/hostile.qcow2';

const missingTools = await missingLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

/** The string form of a config drive: base64 of a gzipped config-2 ISO, made here with genisoimage. */
function configDriveString(metaData: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-cd-'));
  try {
    execFileSync('mkdir', ['-p', join(dir, 'root/openstack/latest')]);
    writeFileSync(join(dir, 'root/openstack/latest/meta_data.json'), JSON.stringify(metaData));
    execFileSync('genisoimage', ['-quiet', '-o', join(dir, 'cd.iso'), '-V', 'config-2', '-r', '-J', join(dir, 'root')]);
    return gzipSync(readFileSync(join(dir, 'cd.iso'))).toString('base64');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function firstBytes(file: string, length: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, 0);
    return buffer;
  } finally {
    await handle.close();
  }
}

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'real deploys through the agent (namespace + dnsmasq, three conductors)',
  () => {
    let image: InstanceImage;
    let images: ImageServer | undefined;
    let imageBase: string;
    let qcow2: string;
    let hostile: string;
    let lab: ProductLab;
    /** Nodes scenario 1 deployed, for scenario 5. */
    const deployed: Array<{ uuid: string; machine: QemuMachine; disk: string }> = [];
    const suite = useProductLab(LABEL, async (base) => {
      image = await buildInstanceImage(E2E_CACHE_DIR);
      lab = await startNetnsProductLab({
        ...base,
        conductors: 3,
        env: {
          // the active node's iPXE script boots its disk (sanboot)
          BMAAS_API__RESTRICT_BOOT_CONFIG: 'false',
          BMAAS_API__RAMDISK_HEARTBEAT_TIMEOUT: '30',
          BMAAS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT: String(CALLBACK_TIMEOUT_S),
          BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'true',
          BMAAS_AGENT__POST_DEPLOY_GET_POWER_STATE_RETRY_INTERVAL: '2',
          BMAAS_AGENT__POST_DEPLOY_GET_POWER_STATE_RETRIES: '10',
        },
      });
      // the qcow2 forms of the instance image, made here from the raw one, and a hostile qcow2 whose
      // backing file is a file of the host
      qcow2 = join(base.workDir, 'instance.qcow2');
      execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', image.path, qcow2]);
      hostile = join(base.workDir, 'hostile.qcow2');
      execFileSync('qemu-img', ['create', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', hostile, '20M'], {
        stdio: 'ignore',
      });
      const socket = join(base.workDir, 'images.sock');
      images = await startImageServer(socket, image.path, { [QCOW2_PATH]: qcow2, [HOSTILE_PATH]: hostile });
      imageBase = await lab.reachFromMachines(socket);
      return lab;
    });

    afterAll(async () => {
      await images?.close();
    });

    /** A powered-off machine with an empty 128 MiB disk, and its node (available) with instance_info. */
    async function machineWithNode(
      name: string,
      mac: string,
      options: { uuid?: string; instanceInfo: Record<string, unknown> },
    ): Promise<{ machine: QemuMachine; uuid: string; disk: string }> {
      const disk = join(lab.workDir, `${name}.disk`);
      await writeFile(disk, '');
      await truncate(disk, DISK_BYTES);
      // 256 MiB: the agent downloads a qcow2 image into RAM (qcow2 cannot be streamed) beside its
      // own unpacked ramdisk, and the instance image (with its UEFI kernel image) no longer fits in 128.
      const machine = await lab.addMachine(name, mac, { disk, hardware: { memoryMb: 256 } });
      const uuid = options.uuid ?? randomUUID();
      await lab.api.expect(201, 'POST', '/v1/nodes', {
        ...nodeBodyFor(machine, suite.ramdisk, { uuid, name, automatedClean: false }),
        instance_info: options.instanceInfo,
      });
      await lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
      await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
      return { machine, uuid, disk };
    }

    function sha256Of(file: string): string {
      return createHash('sha256').update(readFileSync(file)).digest('hex');
    }

    function qcow2Image(path: string, file: string, downloadSource: string): Record<string, unknown> {
      return {
        image_source: `${imageBase}${path}`,
        image_os_hash_algo: 'sha256',
        image_os_hash_value: sha256Of(file),
        image_disk_format: 'qcow2',
        image_download_source: downloadSource,
      };
    }

    function goodImage(path = images?.imagePath): Record<string, unknown> {
      return {
        image_source: `${imageBase}${path}`,
        image_os_hash_algo: 'sha256',
        image_os_hash_value: image.sha256,
        image_disk_format: 'raw',
      };
    }

    /** Deploys and records every (provision_state, deploy_step) the API showed on the way. */
    async function deployWatching(
      uuid: string,
      configdrive: unknown,
      until: string,
    ): Promise<{ node: Record<string, unknown>; seen: Set<string> }> {
      await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active', configdrive });
      const seen = new Set<string>();
      const node = await lab.api.waitForNode(uuid, `"${until}"`, DEPLOY_TIMEOUT_MS, 300, (now) => {
        const step = (now.deploy_step as { step?: string }).step ?? '-';
        seen.add(`${now.provision_state}:${step}`);
        if (now.provision_state === until) return true;
        if (now.provision_state.endsWith('failed')) {
          throw new Error(`${uuid}: ${now.provision_state} waiting for ${until}: ${now.last_error}`);
        }
        return false;
      });
      return { node, seen };
    }

    it(
      '1. three machines of three conductors deploy at once, boot their disks, and their instances report',
      async () => {
        const owners = lab.stack.conductors.map((conductor) => conductor.hostname);
        const uuids = await uuidsOwnedByEach(createStores(suite.database.db), owners);
        const runs = await Promise.all(
          lab.stack.conductors.map(async (owner, index) => {
            const { machine, uuid, disk } = await machineWithNode(`dep${index}`, `52:54:00:e2:d0:0${index + 1}`, {
              uuid: uuids.get(owner.hostname),
              instanceInfo: goodImage(),
            });
            const metaData = { hostname: `instance-${index}`, meta: { e2e_report_url: `${imageBase}/report` } };
            // the object form (built into an ISO by the conductor) for two, the gzipped ISO string for one
            const configdrive = index === 2 ? configDriveString({ uuid, ...metaData }) : { meta_data: metaData };
            const { node, seen } = await deployWatching(uuid, configdrive, 'active');
            const report = await (images as ImageServer).waitForReport(uuid, DEPLOY_TIMEOUT_MS);
            await machine.waitForSerial(/INSTANCE-POWEROFF/, 120_000);
            const mac = `52:54:00:e2:d0:0${index + 1}`;
            return { owner, machine, uuid, disk, node, seen, report, index, mac };
          }),
        );

        for (const { owner, machine, uuid, disk, node, seen, report, index, mac } of runs) {
          expect(node).toMatchObject({
            provision_state: 'active',
            target_provision_state: null,
            conductor: owner.hostname,
            power_state: 'power on',
            deploy_step: {},
            last_error: null,
          });
          // the config drive is stored, never shown
          expect((node.instance_info as Record<string, unknown>).configdrive).toBe('******');
          expect(seen).toContain('wait call-back:deploy');
          expect(seen).toContain('wait call-back:write_image');
          // the agent session ends with the deploy
          expect(node.driver_internal_info).not.toHaveProperty('agent_url');

          const serial = await machine.readSerial();
          expect(serial).toContain(`E2E-LOOKUP ok node=${uuid}`);
          expect(serial).toContain('E2E-AGENT command=deploy.get_deploy_steps');
          expect(serial).toContain('E2E-AGENT command=deploy.execute_deploy_step');
          expect(serial).toContain(`E2E-AGENT image written and verified sha256=${image.sha256}`);
          expect(serial).toMatch(/E2E-AGENT configdrive partition=\/dev\/vda2 .*label=\/dev\/vda2/);
          expect(serial).toContain('E2E-POWEROFF by standby.power_off');
          expect(serial).toContain(`INSTANCE-BOOTED node=${uuid} configdrive=/dev/vda2`);
          expect(serial).not.toMatch(/E2E-FAILED|status=FAILED/);
          // the instance saw its config drive's meta_data and told the test host
          const metaData = JSON.parse(report.body) as Record<string, unknown>;
          expect(metaData).toMatchObject({ uuid, hostname: `instance-${index}` });
          // what is on the disk starts with the image: boot code, then everything after the partition
          // table (which gained the config drive's partition)
          const written = await firstBytes(disk, image.size);
          const original = readFileSync(image.path);
          expect(written.subarray(0, 446).equals(original.subarray(0, 446))).toBe(true);
          expect(written.subarray(512).equals(original.subarray(512))).toBe(true);

          // one static DHCP answer: the first conductor's boot.ipxe; the owner's script (through the
          // boot configuration API) and images; lookup, token and steps on the owner only
          const ip = await (lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
          expect(bootConfigServed(lab.stack, uuid)).toBeGreaterThanOrEqual(2); // ramdisk, then instance
          const served = filesServedTo(lab.stack, ip);
          expect(served).toContainEqual({ url: '/boot.ipxe', status: 200, remote: ip, conductor: owners[0] });
          for (const file of ['deploy_kernel', 'deploy_ramdisk']) {
            expect(served).toContainEqual({
              url: `/${uuid}/${file}`,
              status: 200,
              remote: ip,
              conductor: owner.hostname,
            });
          }
          expect(nodeLines(lab.stack.api.lines, uuid)).toContainEqual(
            expect.objectContaining({ message: 'agent lookup answered', tokenIssued: true }),
          );
          const ownerLines = nodeLines(owner.process.lines, uuid);
          expect(ownerLines).toContainEqual(expect.objectContaining({ message: 'agent token issued' }));
          expect(ownerLines).toContainEqual(
            expect.objectContaining({ message: 'agent called back', from: 'wait call-back' }),
          );
          for (const step of ['deploy', 'write_image', 'prepare_instance_boot', 'tear_down_agent', 'boot_instance']) {
            expect(ownerLines).toContainEqual(
              expect.objectContaining({ message: 'step started', step: `deploy.${step}` }),
            );
          }
          expect(ownerLines).toContainEqual(expect.objectContaining({ message: 'the agent powered the machine off' }));
          for (const other of lab.stack.conductors.filter((conductor) => conductor !== owner)) {
            expect(nodeLines(other.process.lines, uuid).filter((line) => line.message === 'step started')).toEqual([]);
          }
          deployed.push({ uuid, machine, disk });
        }
        expect(new Set(runs.map((run) => run.node.conductor)).size).toBe(3);
        expect(images?.requests.filter((r) => r.url === images?.imagePath).length).toBeGreaterThanOrEqual(3);
      },
      TEST_TIMEOUT_MS,
    );

    it(
      '5. undeploy with automated cleaning erases the disk metadata; the node is available',
      async () => {
        const target = deployed[0];
        if (!target) throw new Error('scenario 1 deployed nothing');
        const { uuid, machine, disk } = target;
        expect((await firstBytes(disk, 512)).readUInt16LE(510)).toBe(0xaa55);
        // the nodes were enrolled with automated_clean false (provide skipped cleaning); this one cleans
        await lab.api.expect(200, 'PATCH', `/v1/nodes/${uuid}`, [
          { op: 'replace', path: '/automated_clean', value: true },
        ]);
        await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'deleted' });
        await lab.api.waitForProvisionState(uuid, 'clean wait', ACTION_TIMEOUT_MS);
        const node = await lab.api.waitForProvisionState(uuid, 'available', DEPLOY_TIMEOUT_MS);
        expect(node).toMatchObject({ power_state: 'power off', clean_step: {}, last_error: null, instance_info: {} });
        const serial = await machine.readSerial();
        expect(serial).toContain('E2E-AGENT command=clean.get_clean_steps');
        expect(serial).toContain('E2E-AGENT metadata erased on /dev/vda');
        // no partition table, no boot code: the instance no longer boots from this disk
        const start = await firstBytes(disk, 1024 * 1024);
        expect(start.equals(Buffer.alloc(start.length))).toBe(true);
        const owner = lab.stack.conductors.find((conductor) => conductor.hostname === node.conductor);
        expect(nodeLines(owner?.process.lines ?? [], uuid)).toContainEqual(
          expect.objectContaining({ message: 'step started', step: 'deploy.erase_devices_metadata' }),
        );
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      '2. a wrong hash fails the deploy, names the mismatch and leaves the machine powered off',
      async () => {
        const { machine, uuid } = await machineWithNode('badhash', '52:54:00:e2:d0:11', {
          instanceInfo: { ...goodImage(), image_os_hash_value: 'f'.repeat(64) },
        });
        const { node } = await deployWatching(uuid, null, 'deploy failed');
        expect(String(node.last_error)).toMatch(
          /Deploy step deploy\.write_image failed: Image failed to verify against checksum/,
        );
        expect(String(node.last_error)).toContain(`image checksum: ${image.sha256}`);
        const off = await lab.api.waitForPowerState(uuid, 'power off', ACTION_TIMEOUT_MS);
        expect(off.provision_state).toBe('deploy failed');
        expect((await (await machine.qmp()).queryStatus()).running).toBe(false);
        expect(await machine.readSerial()).not.toContain('INSTANCE-BOOTED');
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      '3. an image URL answering 404 fails the deploy with a clear last_error',
      async () => {
        const { uuid } = await machineWithNode('noimage', '52:54:00:e2:d0:21', {
          instanceInfo: goodImage('/images/missing.img'),
        });
        const { node } = await deployWatching(uuid, null, 'deploy failed');
        expect(String(node.last_error)).toMatch(
          /Deploy step deploy\.write_image failed: Image download failed\. URL: .*missing\.img/,
        );
        expect(String(node.last_error)).toContain('404');
        expect(images?.requests).toContainEqual({ method: 'GET', url: '/images/missing.img', status: 404 });
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      '4. an agent that stops answering mid-write fails the deploy after deploy_callback_timeout; a redeploy works',
      async () => {
        const mac = '52:54:00:e2:d0:31';
        const { machine, uuid, disk } = await machineWithNode('killed', mac, {
          instanceInfo: goodImage(images?.stallOncePath),
        });
        await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active' });
        await machine.waitForSerial(/E2E-AGENT write_image url=/, DEPLOY_TIMEOUT_MS);
        // Killed only once its download is stalled at the server: the stall must not be left for the redeploy.
        await images?.waitForDownload(images.stallOncePath, ACTION_TIMEOUT_MS);
        const writing = (await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body;
        expect(writing).toMatchObject({ provision_state: 'wait call-back', deploy_step: { step: 'write_image' } });
        const killedAt = Date.now();
        await machine.stop(); // the machine dies mid-download: no more heartbeats, no agent
        const failedNode = await lab.api.waitForProvisionState(
          uuid,
          'deploy failed',
          (CALLBACK_TIMEOUT_S + 120) * 1000,
        );
        expect(String(failedNode.last_error)).toMatch(/Timeout reached while waiting for callback for node .*\(deploy/);
        // not before the timeout (counted from the last heartbeat, which came before the kill)
        expect(Date.now() - killedAt).toBeGreaterThan((CALLBACK_TIMEOUT_S - 40) * 1000);

        // the same node, a new machine process on the same disk and QMP socket: deploys
        const revived = await lab.addMachine('killed2', mac, { disk, qmpSocket: machine.qmpSocket });
        await revived.qmp(); // QEMU is up with its QMP sockets before the product powers it on
        const { node } = await deployWatching(uuid, null, 'active');
        expect(node).toMatchObject({ provision_state: 'active', last_error: null });
        await revived.waitForSerial(/INSTANCE-BOOTED node=none/, DEPLOY_TIMEOUT_MS);
        expect(await revived.readSerial()).toContain(`E2E-AGENT image written and verified sha256=${image.sha256}`);
      },
      TEST_TIMEOUT_MS + CALLBACK_TIMEOUT_S * 1000,
    );

    it.concurrent.each([
      ['local', '52:54:00:e2:d0:41'],
      ['http', '52:54:00:e2:d0:51'],
    ])(
      '6. a qcow2 image with image_download_source %s is written as raw and the machine boots its disk',
      async (source, mac) => {
        const { machine, uuid, disk } = await machineWithNode(`qcow2-${source}`, mac, {
          instanceInfo: qcow2Image(QCOW2_PATH, qcow2, source),
        });
        const { node } = await deployWatching(uuid, null, 'active');
        expect(node).toMatchObject({ provision_state: 'active', last_error: null });
        await machine.waitForSerial(/INSTANCE-BOOTED node=none/, DEPLOY_TIMEOUT_MS);
        const serial = await machine.readSerial();
        // local: the conductor converted it and served raw from its own file server; http: the agent converted it
        const url = source === 'local' ? `/agent_images/${uuid} format=raw` : `${QCOW2_PATH} format=qcow2`;
        expect(serial).toContain(url);
        // the disk holds the raw image (its partition table then gained the config drive's entry, if any)
        const written = await firstBytes(disk, image.size);
        expect(written.subarray(512).equals(readFileSync(image.path).subarray(512))).toBe(true);
        const owner = lab.stack.conductors.find((conductor) => conductor.hostname === node.conductor);
        expect(nodeLines(owner?.process.lines ?? [], uuid)).toContainEqual(
          expect.objectContaining({ message: 'the agent wrote the image asked for' }),
        );
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      '7. a qcow2 whose backing file is a host file is refused with a clear last_error, and nothing is written',
      async () => {
        const { machine, uuid, disk } = await machineWithNode('hostile', '52:54:00:e2:d0:61', {
          instanceInfo: qcow2Image(HOSTILE_PATH, hostile, 'local'),
        });
        const { node } = await deployWatching(uuid, null, 'deploy failed');
        expect(String(node.last_error)).toMatch(
          /Deploy step deploy\.write_image failed: Image http:\/\/.*\/images\/hostile\.qcow2 is unsafe \(qcow2\): qcow2 image has a backing file\./,
        );
        const serial = await machine.readSerial();
        expect(serial).not.toContain('E2E-AGENT command=deploy.execute_deploy_step');
        const start = await firstBytes(disk, 1024 * 1024);
        expect(start.equals(Buffer.alloc(start.length)), 'the disk is untouched').toBe(true);
      },
      TEST_TIMEOUT_MS,
    );
  },
);
