// The same deploy as deploy.test.ts, without root: the machine is on QEMU user-mode
// networking (restrict=on), gets the conductor's boot.ipxe from QEMU's own DHCP and reaches
// the API and the file server (which also serves the instance image) only through guestfwd;
// the conductor reaches its agent through a host port forward, which the agent advertises
// (ipa-advertise-host/-port). Runs wherever QEMU is installed.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import { buildInstanceImage, GUESTFWD_ADDRESS, type InstanceImage } from '@bmaas/lab';
import { describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { bootConfigServed, fileRequests, hexhyp, nodeLines } from './lib/evidence.js';
import { E2E_CACHE_DIR, useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { nodeBodyFor, type ProductLab, startUserModeProductLab } from './lib/product-lab.js';

const LABEL = 'user-mode-boot';
/** One machine alone boots in 10-25 s; other suites may be emulating machines at the same time. */
const BOOT_TIMEOUT_MS = 300_000;
const ACTION_TIMEOUT_MS = 60_000;
/** QEMU's user-mode DHCP gives its first guest this address. */
const SLIRP_GUEST_IP = '10.0.2.15';

const missingTools = await missingLabTools();
const problem = missingTools.length > 0 ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)` : null;

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'an iPXE machine on QEMU user-mode networking (no root needed)',
  () => {
    let image: InstanceImage;
    let lab: ProductLab;
    let workDir: string;
    let agentPort: number;
    const suite = useProductLab(LABEL, async (base) => {
      workDir = base.workDir;
      image = await buildInstanceImage(E2E_CACHE_DIR);
      agentPort = await freePort();
      lab = await startUserModeProductLab({
        ...base,
        conductors: 1,
        agentPort,
        // the active node's iPXE script boots its disk (sanboot)
        env: { BMAAS_API__RESTRICT_BOOT_CONFIG: 'false' },
      });
      // the conductor's file server doubles as the image server
      await mkdir(join(workDir, 'http-0', 'e2e-images'), { recursive: true });
      await copyFile(image.path, join(workDir, 'http-0', 'e2e-images', 'instance.img'));
      return lab;
    });

    it('deploys: DHCP and boot.ipxe from QEMU, the script through the boot API, the agent writes the image, the disk boots', async ({
      expect,
    }) => {
      const mac = '52:54:00:e2:e2:01';
      const uuid = randomUUID();
      const disk = join(workDir, 'slirp.disk');
      await writeFile(disk, '');
      await truncate(disk, 128 * 1024 * 1024);
      const machine = await lab.addMachine('slirp', mac, { disk });
      const events = await machine.qmp();
      const [conductor] = lab.stack.conductors;
      await lab.api.expect(201, 'POST', '/v1/nodes', {
        ...nodeBodyFor(machine, suite.ramdisk, { uuid, name: 'slirp', automatedClean: false }),
        instance_info: {
          image_source: `${conductor?.httpUrl}/e2e-images/instance.img`,
          // the legacy field: a SHA-256 digest (IPA tells the algorithm by length; MD5 only when enabled)
          image_checksum: image.sha256,
        },
      });
      await lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
      expect((await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS)).power_state).toBe(
        'power off',
      );
      await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
      expect((await events.queryStatus()).status).toBe('prelaunch');
      const node = await lab.api.provisionAndWait(uuid, 'active', 'active', BOOT_TIMEOUT_MS);
      await machine.waitForSerial(/INSTANCE-BOOTED/, BOOT_TIMEOUT_MS);
      await machine.stop();

      expect(node).toMatchObject({
        provision_state: 'active',
        conductor: conductor?.hostname,
        power_state: 'power on',
      });
      expect(node.driver_internal_info).toMatchObject({ agent_version: 'e2e-ramdisk' });
      const serial = await machine.readSerial();
      expect(serial).toContain(`E2E-AGENT listening port=9999 callback=http://127.0.0.1:${agentPort}`);
      // the legacy image_checksum still verifies the image
      expect(serial).toContain(`E2E-AGENT image written and verified sha256=${image.sha256}`);
      expect(serial).toContain('E2E-POWEROFF by standby.power_off');
      expect(serial).toContain(`http://${GUESTFWD_ADDRESS}:${conductor?.httpPort}/boot.ipxe... ok`);
      expect(serial).toContain(`${lab.stack.publicApiUrl}/v1/boot/${hexhyp(mac)}/boot.ipxe... ok`);
      expect(serial).toContain(`${conductor?.httpUrl}/${uuid}/deploy_kernel`);
      expect(serial).toContain(`E2E-DHCP ok iface=eth0 ip=${SLIRP_GUEST_IP}`);
      expect(serial).toContain(`E2E-LOOKUP ok node=${uuid} heartbeat_timeout=300`);
      expect(serial).not.toMatch(/E2E-FAILED|E2E-WARN/);

      expect(bootConfigServed(lab.stack, uuid)).toBeGreaterThanOrEqual(1);
      const served = fileRequests(conductor as NonNullable<typeof conductor>).map(
        (request) => `${request.url} ${request.status}`,
      );
      expect(served).toEqual(
        expect.arrayContaining([
          '/boot.ipxe 200',
          `/${uuid}/deploy_kernel 200`,
          `/${uuid}/deploy_ramdisk 200`,
          '/e2e-images/instance.img 200',
        ]),
      );
      const apiLines = nodeLines(lab.stack.api.lines, uuid);
      expect(apiLines).toContainEqual(expect.objectContaining({ message: 'agent lookup answered', tokenIssued: true }));
      expect(apiLines).toContainEqual(expect.objectContaining({ message: 'agent heartbeat accepted' }));
      expect(nodeLines(conductor?.process.lines ?? [], uuid)).toContainEqual(
        expect.objectContaining({ message: 'agent called back', from: 'wait call-back' }),
      );
      // Powered by the product through QMP: on for the ramdisk, on again for the instance.
      expect(events.events.filter((event) => event.event === 'RESUME').length).toBeGreaterThanOrEqual(2);
    }, 480_000);
  },
);
