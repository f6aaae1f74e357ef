// Real iPXE machines (QEMU, TCG) on a namespace bridge boot through ONE static dnsmasq
// configuration: every machine gets the same wildcard boot.ipxe, which asks the boot
// configuration API for its own script; the API routes to whichever of three conductors owns
// the node. (Deploys that write a disk, across the same three conductors: deploy.test.ts.)
// The machines are powered by the product's qemu power interface, never by the harness.
import { randomUUID } from 'node:crypto';
import type { QemuMachine } from '@bmaas/lab';
import { netnsUnavailableReason } from '@bmaas/lab';
import { describe, it } from 'vitest';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { bootConfigRefusals, bootConfigServed, filesServedTo, nodeLines } from './lib/evidence.js';
import { useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { FALLBACK_MARKER, nodeBodyFor, type ProductLab, startNetnsProductLab } from './lib/product-lab.js';

const LABEL = 'multi-conductor-boot';
/** Seven machines share two emulating cores with the rest of the test run; one alone boots in 10-25 s. */
const BOOT_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 360_000;
const ACTION_TIMEOUT_MS = 60_000;

// Unavailable tools or privileges skip loudly (npm test says so too when it cannot install packages).
const missingTools = await missingLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'iPXE machines, one static DHCP config, three conductors (namespace + dnsmasq)',
  () => {
    let lab: ProductLab;
    const suite = useProductLab(LABEL, async (base) => {
      lab = await startNetnsProductLab({ ...base, conductors: 3, env: { BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'true' } });
      return lab;
    });

    /** A powered-off machine, the harness watching its QMP events, and its node enrolled with one port. */
    async function machineWithNode(
      name: string,
      mac: string,
      fields: { uuid?: string; automatedClean?: boolean } = {},
    ): Promise<{ machine: QemuMachine; uuid: string; events: Awaited<ReturnType<QemuMachine['qmp']>> }> {
      const machine = await lab.addMachine(name, mac);
      const events = await machine.qmp();
      const uuid = fields.uuid ?? randomUUID();
      await lab.api.expect(201, 'POST', '/v1/nodes', {
        ...nodeBodyFor(machine, suite.ramdisk, { uuid, name, ...fields }),
        // what deploy validates; these scenarios never get as far as downloading it
        instance_info: UNFETCHED_INSTANCE_INFO,
      });
      await lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
      return { machine, uuid, events };
    }

    /** enroll -> manageable (reads the power state through QMP) -> available. */
    async function makeAvailable(uuid: string): Promise<void> {
      const managed = await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      if (managed.power_state !== 'power off')
        throw new Error(`${uuid}: power state ${managed.power_state} after manage`);
      await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
    }

    it.concurrent(
      'hands the agent token out once: a second caller of lookup cannot heartbeat, the guest locks itself down, the holder has no agent',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:11';
        const { machine, uuid, events } = await machineWithNode('token', mac, { automatedClean: false });
        await makeAvailable(uuid);
        await lab.api.provisionAndWait(uuid, 'active', 'wait call-back', ACTION_TIMEOUT_MS);
        // Someone on the provisioning network looks the node up before its ramdisk has booted.
        const first = await lab.api.expect(200, 'GET', `/v1/lookup?addresses=${mac}`);
        const token = first.body.config.agent_token as string;
        expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

        await machine.waitForSerial(/E2E-POWEROFF/, BOOT_TIMEOUT_MS);
        const serial = await machine.readSerial();
        // The ramdisk's agent got "******": like IPA, it locks itself down instead of heartbeating.
        expect(serial).toContain('E2E-LOOKUP token already issued to another caller: locking down');
        expect(serial).not.toContain('E2E-HEARTBEAT');
        expect(nodeLines(lab.stack.api.lines, uuid)).toContainEqual(
          expect.objectContaining({ message: 'agent lookup answered', tokenIssued: false }),
        );
        // The guest's `poweroff -f`: with -no-shutdown QEMU stays up, powered off.
        await events.waitForEvent(
          'SHUTDOWN',
          30_000,
          (event) => (event.data as { reason?: string })?.reason === 'guest-shutdown',
        );
        expect((await events.queryStatus()).status).toBe('shutdown');
        expect((await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body.provision_state).toBe('wait call-back');

        // The token's holder heartbeats (accepted), but no agent answers at its callback URL (nothing
        // listens on the bridge's port 9): the owner's first command fails and so does the deploy.
        const nowhere = `http://${new URL(lab.stack.conductors[0]?.httpUrl ?? '').hostname}:9`;
        await lab.api.expect(202, 'POST', `/v1/heartbeat/${uuid}`, {
          callback_url: nowhere,
          agent_token: token,
          agent_version: 'e2e-test',
        });
        const failed = await lab.api.waitForProvisionState(uuid, 'deploy failed', ACTION_TIMEOUT_MS);
        expect(String(failed.last_error)).toMatch(
          /Failed to send deploy\.get_deploy_steps to the agent .* after 3 attempts/,
        );
        expect(failed).toMatchObject({ power_state: 'power off', deploy_step: {} });
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'an unknown machine: the API answers 404, the wildcard script falls back, nothing of a node is served',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:21';
        const machine = await lab.addMachine('stranger', mac);
        const events = await machine.qmp();
        await events.cont(); // no node, so nothing in the product will power it on
        await machine.waitForSerial(new RegExp(`${FALLBACK_MARKER} no boot configuration for ${mac}`), BOOT_TIMEOUT_MS);
        await machine.stop(); // it would reboot and try again, as a real machine does

        const ip = await (lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
        // each NIC is tried a few times before the fallback: every try refused, as an unknown MAC
        const refusals = bootConfigRefusals(lab.stack, mac);
        expect(refusals.length).toBeGreaterThanOrEqual(1);
        for (const refusal of refusals) expect(refusal).toMatchObject({ reason: 'unknown-mac', detail: mac });
        const urls = new Set(filesServedTo(lab.stack, ip).map((request) => request.url));
        expect(urls).toEqual(new Set(['/boot.ipxe', '/e2e-fallback.ipxe']));
        expect(await machine.readSerial()).not.toContain('E2E-RAMDISK');
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'a node that is not waiting for a ramdisk (enroll, with a port): 404 and no ramdisk boot; the API powers it on and off through QMP',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:31';
        const { machine, uuid, events } = await machineWithNode('idle', mac);
        await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power on' });
        await events.waitForEvent('RESUME', 30_000); // the product's qemu power interface
        await machine.waitForSerial(new RegExp(`${FALLBACK_MARKER} no boot configuration for ${mac}`), BOOT_TIMEOUT_MS);

        const ip = await (lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
        const refusals = bootConfigRefusals(lab.stack, mac);
        expect(refusals.length).toBeGreaterThanOrEqual(1);
        for (const refusal of refusals) {
          expect(refusal).toMatchObject({ reason: 'state-not-allowed', nodeUuid: uuid, detail: 'enroll' });
        }
        expect(bootConfigServed(lab.stack, uuid)).toBe(0);
        expect(filesServedTo(lab.stack, ip).every((request) => !request.url.includes(uuid))).toBe(true);
        expect(await machine.readSerial()).not.toContain('E2E-RAMDISK');
        expect((await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body.power_state).toBe('power on');
        await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power off' });
        await lab.api.waitForPowerState(uuid, 'power off', ACTION_TIMEOUT_MS);
        expect((await events.queryStatus()).running).toBe(false);
        // verifying reads the power state back through QMP
        const managed = await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
        expect(managed.power_state).toBe('power off');
      },
      TEST_TIMEOUT_MS,
    );
  },
);
