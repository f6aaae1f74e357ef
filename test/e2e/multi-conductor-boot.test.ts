// Real iPXE machines (QEMU, TCG) on a namespace bridge boot through ONE static dnsmasq
// configuration: every machine gets the same wildcard boot.ipxe, which asks the boot
// configuration API for its own script; the API routes to whichever of three conductors owns
// the node. The deploy ramdisk then looks itself up and heartbeats, and the product finishes.
// The machines are powered by the product's qemu power interface, never by the harness.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createStores } from '@bmaas/db';
import { describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import {
  bootConfigRefusals,
  bootConfigServed,
  fileRequests,
  filesServedTo,
  nodeLines,
  uuidsOwnedByEach,
} from './lib/evidence.js';
import { useProductLab } from './lib/lab-suite.js';
import { netnsUnavailableReason } from './lib/netns.js';
import { missingLabTools } from './lib/prerequisites.js';
import { FALLBACK_MARKER, nodeBodyFor, startNetnsProductLab } from './lib/product-lab.js';
import type { QemuMachine } from './lib/qemu.js';

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
    const suite = useProductLab(LABEL, (base) =>
      startNetnsProductLab({ ...base, conductors: 3, env: { BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'true' } }),
    );

    /** A powered-off machine, the harness watching its QMP events, and its node enrolled with one port. */
    async function machineWithNode(
      name: string,
      mac: string,
      fields: { uuid?: string; automatedClean?: boolean } = {},
    ): Promise<{ machine: QemuMachine; uuid: string; events: Awaited<ReturnType<QemuMachine['qmp']>> }> {
      const machine = await suite.lab.addMachine(name, mac);
      const events = await machine.qmp();
      const uuid = fields.uuid ?? randomUUID();
      await suite.lab.api.expect(
        201,
        'POST',
        '/v1/nodes',
        nodeBodyFor(machine, suite.ramdisk, { uuid, name, ...fields }),
      );
      await suite.lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
      return { machine, uuid, events };
    }

    /** enroll -> manageable (reads the power state through QMP) -> available. */
    async function makeAvailable(uuid: string): Promise<void> {
      const managed = await suite.lab.api.provision(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      if (managed.power_state !== 'power off')
        throw new Error(`${uuid}: power state ${managed.power_state} after manage`);
      await suite.lab.api.provision(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
    }

    it.concurrent(
      'deploys three nodes owned by three different conductors, each booting the ramdisk its owner prepared',
      async ({ expect }) => {
        const owners = suite.lab.stack.conductors.map((conductor) => conductor.hostname);
        const uuids = await uuidsOwnedByEach(createStores(suite.database.db), owners);
        const runs = await Promise.all(
          suite.lab.stack.conductors.map(async (owner, index) => {
            const mac = `52:54:00:e2:e1:0${index + 1}`;
            const { machine, uuid, events } = await machineWithNode(`deploy${index}`, mac, {
              uuid: uuids.get(owner.hostname),
              automatedClean: false,
            });
            await makeAvailable(uuid);
            expect((await events.queryStatus()).status, 'nothing powered it on yet').toBe('prelaunch');
            const node = await suite.lab.api.provision(uuid, 'active', 'active', BOOT_TIMEOUT_MS);
            // Deployed; without a disk it would boot iPXE in a loop: free the cores for the others.
            await machine.stop();
            return { owner, mac, machine, uuid, events, node };
          }),
        );

        for (const { owner, mac, machine, uuid, events, node } of runs) {
          expect(node).toMatchObject({ provision_state: 'active', conductor: owner.hostname, power_state: 'power on' });
          // One static DHCP answer for every machine: the first conductor's wildcard boot.ipxe.
          const ip = await (suite.lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
          expect(node.driver_internal_info).toMatchObject({
            agent_url: `http://${ip}:9999`,
            agent_version: 'e2e-ramdisk',
            agent_secret_token: '******',
          });
          // The API served the owner's script, the machine fetched the owner's images, looked up and heartbeated.
          expect(bootConfigServed(suite.lab.stack, uuid)).toBeGreaterThanOrEqual(1);
          const served = filesServedTo(suite.lab.stack, ip);
          expect(served).toContainEqual({ url: '/boot.ipxe', status: 200, remote: ip, conductor: owners[0] });
          expect(served).toContainEqual({
            url: `/${uuid}/deploy_kernel`,
            status: 200,
            remote: ip,
            conductor: owner.hostname,
          });
          expect(served).toContainEqual({
            url: `/${uuid}/deploy_ramdisk`,
            status: 200,
            remote: ip,
            conductor: owner.hostname,
          });
          for (const other of suite.lab.stack.conductors.filter((conductor) => conductor !== owner)) {
            expect(fileRequests(other).some((request) => request.url.includes(uuid))).toBe(false);
            expect(nodeLines(other.process.lines, uuid).some((line) => line.message === 'agent token issued')).toBe(
              false,
            );
          }
          const ownerLines = nodeLines(owner.process.lines, uuid);
          expect(ownerLines).toContainEqual(expect.objectContaining({ message: 'agent token issued' }));
          expect(ownerLines).toContainEqual(
            expect.objectContaining({ message: 'agent called back', from: 'wait call-back' }),
          );
          const apiLines = nodeLines(suite.lab.stack.api.lines, uuid);
          expect(apiLines).toContainEqual(
            expect.objectContaining({ message: 'agent lookup answered', tokenIssued: true }),
          );
          expect(apiLines).toContainEqual(expect.objectContaining({ message: 'agent heartbeat accepted' }));

          const serial = await machine.readSerial();
          expect(serial).toContain(`${owner.httpUrl}/${uuid}/deploy_kernel`);
          expect(serial).toContain(`E2E-NICS macs=${mac} bootif=${mac}`);
          expect(serial).toContain(`E2E-LOOKUP ok node=${uuid} heartbeat_timeout=300`);
          // (the owner powers the machine off as soon as it accepts the heartbeat, so the ramdisk's own
          // "E2E-HEARTBEAT ok" line rarely reaches the console: the API's log above has the 202)
          expect(serial).not.toMatch(/E2E-FAILED|E2E-WARN/);
          // Powered on by the product through QMP (the harness only watches), twice: ramdisk, then instance.
          expect(events.events.filter((event) => event.event === 'RESUME').length).toBeGreaterThanOrEqual(2);
        }
        expect(new Set(runs.map((run) => run.node.conductor)).size).toBe(3);
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'hands the agent token out once: a second caller of lookup cannot heartbeat, the guest powers itself off, the holder finishes',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:11';
        const { machine, uuid, events } = await machineWithNode('token', mac, { automatedClean: false });
        await makeAvailable(uuid);
        await suite.lab.api.provision(uuid, 'active', 'wait call-back', ACTION_TIMEOUT_MS);
        // Someone on the provisioning network looks the node up before its ramdisk has booted.
        const first = await suite.lab.api.expect(200, 'GET', `/v1/lookup?addresses=${mac}`);
        const token = first.body.config.agent_token as string;
        expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

        await machine.waitForSerial(/E2E-POWEROFF/, BOOT_TIMEOUT_MS);
        const serial = await machine.readSerial();
        expect(serial).toContain(`E2E-LOOKUP ok node=${uuid}`);
        expect(serial).toMatch(/E2E-HEARTBEAT failed rc=\d+ status=400/);
        expect(nodeLines(suite.lab.stack.api.lines, uuid)).toContainEqual(
          expect.objectContaining({ message: 'agent lookup answered', tokenIssued: false }),
        );
        // The guest's `poweroff -f`: with -no-shutdown QEMU stays up, powered off.
        await events.waitForEvent(
          'SHUTDOWN',
          30_000,
          (event) => (event.data as { reason?: string })?.reason === 'guest-shutdown',
        );
        expect((await events.queryStatus()).status).toBe('shutdown');
        expect((await suite.lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body.provision_state).toBe(
          'wait call-back',
        );

        // The token's holder heartbeats: the owner reads the machine as off and powers it on again.
        const resumesBefore = events.events.length;
        await suite.lab.api.expect(202, 'POST', `/v1/heartbeat/${uuid}`, {
          callback_url: 'http://192.0.2.1:9999',
          agent_token: token,
          agent_version: 'e2e-test',
        });
        const active = await suite.lab.api.waitForProvisionState(uuid, 'active', ACTION_TIMEOUT_MS);
        expect(active).toMatchObject({
          power_state: 'power on',
          driver_internal_info: { agent_url: 'http://192.0.2.1:9999' },
        });
        await events.waitForEvent('RESUME', 10_000, (event) => events.events.indexOf(event) >= resumesBefore);
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'an unknown machine: the API answers 404, the wildcard script falls back, nothing of a node is served',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:21';
        const machine = await suite.lab.addMachine('stranger', mac);
        const events = await machine.qmp();
        await events.cont(); // no node, so nothing in the product will power it on
        await machine.waitForSerial(new RegExp(`${FALLBACK_MARKER} no boot configuration for ${mac}`), BOOT_TIMEOUT_MS);
        await machine.stop(); // it would reboot and try again, as a real machine does

        const ip = await (suite.lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
        // each NIC is tried a few times before the fallback: every try refused, as an unknown MAC
        const refusals = bootConfigRefusals(suite.lab.stack, mac);
        expect(refusals.length).toBeGreaterThanOrEqual(1);
        for (const refusal of refusals) expect(refusal).toMatchObject({ reason: 'unknown-mac', detail: mac });
        const urls = new Set(filesServedTo(suite.lab.stack, ip).map((request) => request.url));
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
        await suite.lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power on' });
        await events.waitForEvent('RESUME', 30_000); // the product's qemu power interface
        await machine.waitForSerial(new RegExp(`${FALLBACK_MARKER} no boot configuration for ${mac}`), BOOT_TIMEOUT_MS);

        const ip = await (suite.lab.dnsmasq?.waitForDhcpAck(mac, 1000) ?? '');
        const refusals = bootConfigRefusals(suite.lab.stack, mac);
        expect(refusals.length).toBeGreaterThanOrEqual(1);
        for (const refusal of refusals) {
          expect(refusal).toMatchObject({ reason: 'state-not-allowed', nodeUuid: uuid, detail: 'enroll' });
        }
        expect(bootConfigServed(suite.lab.stack, uuid)).toBe(0);
        expect(filesServedTo(suite.lab.stack, ip).every((request) => !request.url.includes(uuid))).toBe(true);
        expect(await machine.readSerial()).not.toContain('E2E-RAMDISK');
        expect((await suite.lab.api.expect(200, 'GET', `/v1/nodes/${uuid}`)).body.power_state).toBe('power on');
        await suite.lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power off' });
        await suite.lab.api.waitForPowerState(uuid, 'power off', ACTION_TIMEOUT_MS);
        expect((await events.queryStatus()).running).toBe(false);
        // verifying reads the power state back through QMP
        const managed = await suite.lab.api.provision(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
        expect(managed.power_state).toBe('power off');
      },
      TEST_TIMEOUT_MS,
    );

    it.concurrent(
      'automated cleaning: provide boots the ramdisk in clean wait, its heartbeat ends cleaning in available',
      async ({ expect }) => {
        const mac = '52:54:00:e2:e1:41';
        const { machine, uuid, events } = await machineWithNode('cleaner', mac, { automatedClean: true });
        await suite.lab.api.provision(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
        const node = await suite.lab.api.provision(uuid, 'provide', 'available', BOOT_TIMEOUT_MS);
        expect(node).toMatchObject({ provision_state: 'available', power_state: 'power off' });

        const owner = suite.lab.stack.conductors.find((conductor) => conductor.hostname === node.conductor);
        expect(owner).toBeDefined();
        expect(nodeLines(owner?.process.lines ?? [], uuid)).toContainEqual(
          expect.objectContaining({ message: 'agent called back', from: 'clean wait' }),
        );
        expect(bootConfigServed(suite.lab.stack, uuid)).toBeGreaterThanOrEqual(1);
        const serial = await machine.readSerial();
        expect(serial).toContain(`E2E-LOOKUP ok node=${uuid}`);
        expect(nodeLines(suite.lab.stack.api.lines, uuid)).toContainEqual(
          expect.objectContaining({ message: 'agent heartbeat accepted' }),
        );
        // Cleaning done: the ramdisk's files are gone from the owner's HTTP root.
        expect(existsSync(join(owner?.httpRoot ?? '', uuid))).toBe(false);
        expect(events.events.some((event) => event.event === 'RESUME')).toBe(true);
      },
      TEST_TIMEOUT_MS,
    );
  },
);
