// The same boot as multi-conductor-boot.test.ts, without root: the machine is on QEMU
// user-mode networking (restrict=on), gets the conductor's boot.ipxe from QEMU's own DHCP and
// reaches the API and the file server only through guestfwd. Runs wherever QEMU is installed.
import { randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { bootConfigServed, fileRequests, hexhyp, nodeLines } from './lib/evidence.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { nodeBodyFor, startUserModeProductLab } from './lib/product-lab.js';
import { GUESTFWD_ADDRESS } from './lib/qemu.js';

const LABEL = 'user-mode-boot';
/** One machine alone boots in 10-25 s; other suites may be emulating machines at the same time. */
const BOOT_TIMEOUT_MS = 180_000;
const ACTION_TIMEOUT_MS = 60_000;
/** QEMU's user-mode DHCP gives its first guest this address. */
const SLIRP_GUEST_IP = '10.0.2.15';

const missingTools = await missingLabTools();
const problem = missingTools.length > 0 ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)` : null;

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'an iPXE machine on QEMU user-mode networking (no root needed)',
  () => {
    const suite = useProductLab(LABEL, (base) => startUserModeProductLab({ ...base, conductors: 1 }));

    it('deploys: DHCP and boot.ipxe from QEMU, the script through the boot API, lookup, heartbeat, active', async ({
      expect,
    }) => {
      const mac = '52:54:00:e2:e2:01';
      const uuid = randomUUID();
      const machine = await suite.lab.addMachine('slirp', mac);
      const events = await machine.qmp();
      await suite.lab.api.expect(
        201,
        'POST',
        '/v1/nodes',
        nodeBodyFor(machine, suite.ramdisk, { uuid, name: 'slirp', automatedClean: false }),
      );
      await suite.lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
      expect((await suite.lab.api.provision(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS)).power_state).toBe(
        'power off',
      );
      await suite.lab.api.provision(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
      expect((await events.queryStatus()).status).toBe('prelaunch');
      const node = await suite.lab.api.provision(uuid, 'active', 'active', BOOT_TIMEOUT_MS);
      await machine.stop();

      const [conductor] = suite.lab.stack.conductors;
      expect(node).toMatchObject({
        provision_state: 'active',
        conductor: conductor?.hostname,
        power_state: 'power on',
      });
      expect(node.driver_internal_info).toMatchObject({
        agent_url: `http://${SLIRP_GUEST_IP}:9999`,
        agent_version: 'e2e-ramdisk',
        agent_secret_token: '******',
      });
      const serial = await machine.readSerial();
      expect(serial).toContain(`http://${GUESTFWD_ADDRESS}:${conductor?.httpPort}/boot.ipxe... ok`);
      expect(serial).toContain(`${suite.lab.stack.publicApiUrl}/v1/boot/${hexhyp(mac)}/boot.ipxe... ok`);
      expect(serial).toContain(`${conductor?.httpUrl}/${uuid}/deploy_kernel`);
      expect(serial).toContain(`E2E-DHCP ok iface=eth0 ip=${SLIRP_GUEST_IP}`);
      expect(serial).toContain(`E2E-LOOKUP ok node=${uuid} heartbeat_timeout=300`);
      expect(serial).not.toMatch(/E2E-FAILED|E2E-WARN/);

      expect(bootConfigServed(suite.lab.stack, uuid)).toBeGreaterThanOrEqual(1);
      const served = fileRequests(conductor as NonNullable<typeof conductor>).map(
        (request) => `${request.url} ${request.status}`,
      );
      expect(served).toEqual(
        expect.arrayContaining(['/boot.ipxe 200', `/${uuid}/deploy_kernel 200`, `/${uuid}/deploy_ramdisk 200`]),
      );
      const apiLines = nodeLines(suite.lab.stack.api.lines, uuid);
      expect(apiLines).toContainEqual(expect.objectContaining({ message: 'agent lookup answered', tokenIssued: true }));
      expect(apiLines).toContainEqual(expect.objectContaining({ message: 'agent heartbeat accepted' }));
      expect(nodeLines(conductor?.process.lines ?? [], uuid)).toContainEqual(
        expect.objectContaining({ message: 'agent called back', from: 'wait call-back' }),
      );
      // Powered by the product through QMP: on for the ramdisk, on again for the instance.
      expect(events.events.filter((event) => event.event === 'RESUME').length).toBeGreaterThanOrEqual(2);
    }, 300_000);
  },
);
