// In-band inspection and discovery with real iPXE machines (QEMU, TCG) on a namespace bridge,
// one static dnsmasq configuration for all, three conductors. The test ramdisk reads the
// machine (/proc, /sys: CPUs, memory, disks, NICs) and posts its inventory like
// ironic-python-agent; the product's qemu power interface powers the machines.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MachineHardware, QemuMachine } from '@bmaas/lab';
import { buildTestRamdisk, netnsUnavailableReason, RAMDISK_KERNEL_ARGS } from '@bmaas/lab';
import { describe, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { type LabSuite, useProductLab } from './lib/lab-suite.js';
import { missingLabTools } from './lib/prerequisites.js';
import { FALLBACK_MARKER, inspected, nodeBodyFor, startNetnsProductLab } from './lib/product-lab.js';

const LABEL = 'inspection';
const CACHE_DIR = process.env.BMAAS_E2E_CACHE ?? fileURLToPath(new URL('./.cache', import.meta.url));
const BOOT_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 420_000;
const ACTION_TIMEOUT_MS = 60_000;
/** [conductor]inspect_wait_timeout here: long enough for a busy machine to boot, short enough to wait for. */
const INSPECT_WAIT_TIMEOUT_S = 150;
const MIB = 1024 * 1024;
const INVENTORY_VERSION = { 'X-OpenStack-Ironic-API-Version': '1.81' };

const missingTools = await missingLabTools();
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();
// Evaluated once: both describe blocks skip (or, under CI=true, fail) for the same reason.
const skip = missingPrerequisite(LABEL, problem);

/** Two disks and two NICs, as the scenarios want; `cpus` and memory vary per machine. */
function hardware(index: number, cpus: number, memoryMb = 128): MachineHardware {
  return {
    cpus,
    memoryMb,
    disks: [
      { sizeMb: 5 * 1024, serial: `m${index}-first` },
      { sizeMb: 9 * 1024, serial: `m${index}-second` },
    ],
    extraMacs: [`52:54:00:e3:0${index}:02`],
    serial: `E2E-SN-${index}`,
  };
}

/** Three conductors in the namespace lab, with `env` for every process; `prepare` runs before they start. */
function inspectionLab(
  env: Parameters<typeof startNetnsProductLab>[0]['env'],
  prepare?: (workDir: string) => Promise<void>,
): LabSuite {
  return useProductLab(LABEL, async (base) => {
    await prepare?.(base.workDir);
    return startNetnsProductLab({ ...base, conductors: 3, env });
  });
}

describe.skipIf(skip)('inspection of enrolled machines (discovery off)', () => {
  const state = inspectionLab({
    BMAAS_INSPECTOR__ADD_PORTS: 'all',
    BMAAS_CONDUCTOR__INSPECT_WAIT_TIMEOUT: String(INSPECT_WAIT_TIMEOUT_S),
  });

  /** A powered-off machine and its node (agent inspection, one port: the booting NIC) in manageable. */
  async function enrolled(
    name: string,
    mac: string,
    hw: MachineHardware | undefined,
    properties: Record<string, unknown> = {},
  ): Promise<{ machine: QemuMachine; uuid: string }> {
    const lab = state.lab;
    const machine = await lab.addMachine(name, mac, hw ? { hardware: hw } : {});
    const uuid = randomUUID();
    const body = {
      ...nodeBodyFor(machine, state.ramdisk, { uuid, name }),
      inspect_interface: 'agent',
      properties,
    };
    await lab.api.expect(201, 'POST', '/v1/nodes', body);
    await lab.api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: uuid });
    await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
    return { machine, uuid };
  }

  it.concurrent(
    'two machines with 2 disks and 2 NICs inspected at once; a size hint picks the second disk',
    async ({ expect }) => {
      const lab = state.lab;
      const specs = [
        { index: 1, cpus: 2, memoryMb: 256, hints: {} as Record<string, unknown>, localGb: 4 },
        // Scenario 2: the root device hint by size names the second (9 GiB) disk.
        { index: 2, cpus: 1, memoryMb: 128, hints: { root_device: { size: 9 } }, localGb: 8 },
      ];
      const runs = await Promise.all(
        specs.map(async (spec) => {
          const mac = `52:54:00:e3:0${spec.index}:01`;
          const hw = hardware(spec.index, spec.cpus, spec.memoryMb);
          const { machine, uuid } = await enrolled(`insp${spec.index}`, mac, hw, spec.hints);
          const events = await machine.qmp();
          const waiting = await lab.api.provisionAndWait(uuid, 'inspect', 'inspect wait', ACTION_TIMEOUT_MS);
          expect(waiting.power_state).toBe('power on');
          // The hints reach the agent the way ironic-python-agent reads them: node.properties at lookup.
          const lookup = await lab.api.request('GET', `/v1/lookup?node_uuid=${uuid}`, undefined, {
            'X-OpenStack-Ironic-API-Version': '1.62',
          });
          expect(lookup.status).toBe(200);
          expect((lookup.body as { node: { properties: unknown } }).node.properties).toEqual(spec.hints);
          const node = await lab.api.waitForProvisionState(uuid, 'manageable', BOOT_TIMEOUT_MS);
          // The ramdisk posted (its answer may not reach the console: the product powers it off at once).
          await machine.waitForSerial(/E2E-INSPECTION posting to=http:\/\/\S+\/v1\/continue_inspection/, 10_000);
          return { spec, mac, machine, uuid, node, events };
        }),
      );
      for (const { spec, mac, uuid, node, events } of runs) {
        expect(node).toMatchObject({
          last_error: null,
          power_state: 'power off',
          properties: {
            ...spec.hints,
            cpus: spec.cpus,
            memory_mb: spec.memoryMb,
            local_gb: spec.localGb,
            cpu_arch: 'x86_64',
            capabilities: 'boot_mode:bios',
          },
        });
        // Powered off by the product (QMP stop), not by the guest.
        expect((await events.queryStatus()).running).toBe(false);
        const ports = await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}/ports?detail=true`);
        const portList = (ports.body as { ports: Array<{ address: string; pxe_enabled: boolean }> }).ports;
        expect(portList.map((p) => [p.address, p.pxe_enabled]).sort()).toEqual([
          [mac, true],
          [`52:54:00:e3:0${spec.index}:02`, false],
        ]);
        const inventory = await lab.api.request('GET', `/v1/nodes/${uuid}/inventory`, undefined, INVENTORY_VERSION);
        expect(inventory.status).toBe(200);
        const disks = (
          inventory.body as { inventory: { disks: Array<{ name: string; size: number; serial: string }> } }
        ).inventory.disks;
        expect(disks.map((d) => [d.name, d.size / MIB, d.serial])).toEqual([
          ['/dev/vda', 5 * 1024, `m${spec.index}-first`],
          ['/dev/vdb', 9 * 1024, `m${spec.index}-second`],
        ]);
      }
    },
    TEST_TIMEOUT_MS,
  );

  it.concurrent(
    'an inventory that never comes: inspect failed with a clear last_error, machine powered off',
    async ({ expect }) => {
      const lab = state.lab;
      // The node's port names a MAC the machine does not have: it boots, finds no script, never posts.
      const machine = await lab.addMachine('insp-timeout', '52:54:00:e3:09:01');
      const events = await machine.qmp();
      const uuid = randomUUID();
      const body = {
        ...nodeBodyFor(machine, state.ramdisk, { uuid, name: 'insp-timeout' }),
        inspect_interface: 'agent',
      };
      await lab.api.expect(201, 'POST', '/v1/nodes', body);
      await lab.api.expect(201, 'POST', '/v1/ports', { address: '52:54:00:e3:09:99', node_uuid: uuid });
      await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      await lab.api.provisionAndWait(uuid, 'inspect', 'inspect wait', ACTION_TIMEOUT_MS);
      await machine.waitForSerial(new RegExp(FALLBACK_MARKER), BOOT_TIMEOUT_MS);
      // A machine hung where its ramdisk should run: paused, so it does not reboot in a loop on the shared cores.
      await events.execute('stop');
      const failed = await lab.api.waitForProvisionState(uuid, 'inspect failed', (INSPECT_WAIT_TIMEOUT_S + 120) * 1000);
      expect(failed.last_error).toBe(
        `Timeout reached while waiting for callback for node ${uuid} (inspect, ${INSPECT_WAIT_TIMEOUT_S} s).`,
      );
      expect(failed.power_state).toBe('power off');
      expect((await events.queryStatus()).running).toBe(false);
    },
    (INSPECT_WAIT_TIMEOUT_S + 300) * 1000,
  );

  it.concurrent(
    'discovery off: unknown machines get the fallback and nothing is created',
    async ({ expect }) => {
      const lab = state.lab;
      const machine = await lab.addMachine('undisc', '52:54:00:e3:0a:01');
      await (await machine.qmp()).execute('cont');
      await machine.waitForSerial(new RegExp(FALLBACK_MARKER), BOOT_TIMEOUT_MS);
      const serial = await machine.readSerial();
      expect(serial).toContain('discovery.ipxe');
      expect(serial).not.toContain('E2E-RAMDISK');
      await machine.stop();
      const ports = await lab.api.expect(200, 'GET', '/v1/ports?address=52:54:00:e3:0a:01');
      expect((ports.body as { ports: unknown[] }).ports).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe.skipIf(skip)('discovery on: unknown machines enrol themselves', () => {
  const state = inspectionLab(
    (layout) => ({
      BMAAS_DISCOVERY__ENABLED: 'true',
      // The discovery script's own kernel parameters: the ramdisk's console on the serial port.
      BMAAS_DISCOVERY__KERNEL_APPEND_PARAMS: RAMDISK_KERNEL_ARGS,
      BMAAS_DISCOVERY__INTERFACES: 'inspect:agent,power:qemu',
      BMAAS_DISCOVERY__NAME_TEMPLATE: 'rack-{serial}',
      BMAAS_DISCOVERY__DEPLOY_KERNEL: `${layout.httpUrls[0]}/discovery/kernel`,
      BMAAS_DISCOVERY__DEPLOY_RAMDISK: `${layout.httpUrls[0]}/discovery/initrd`,
    }),
    async (workDir) => {
      // The inspection ramdisk, served by the first conductor's file server (the root boot.ipxe is there too).
      const ramdisk = await buildTestRamdisk(CACHE_DIR);
      await mkdir(join(workDir, 'http-0', 'discovery'), { recursive: true });
      await copyFile(ramdisk.kernel, join(workDir, 'http-0', 'discovery', 'kernel'));
      await copyFile(ramdisk.initrd, join(workDir, 'http-0', 'discovery', 'initrd'));
    },
  );

  it(
    'three unknown machines power on: three nodes with their ports and properties, no duplicates',
    async ({ expect }) => {
      const lab = state.lab;
      const machines = await Promise.all(
        [4, 5, 6].map((index) =>
          lab.addMachine(`disc${index}`, `52:54:00:e3:0${index}:01`, { hardware: hardware(index, 1) }),
        ),
      );
      await Promise.all(machines.map(async (machine) => (await machine.qmp()).execute('cont')));
      const posted = await Promise.all(
        machines.map((machine) => machine.waitForSerial(/E2E-INSPECTION status=(\d+) node=(\S*)/, BOOT_TIMEOUT_MS)),
      );
      await Promise.all(machines.map((machine) => machine.stop()));
      expect(posted.map((match) => match[1])).toEqual(['202', '202', '202']);
      const uuids = posted.map((match) => match[2] as string);
      expect(new Set(uuids).size).toBe(3);

      const nodes = (await lab.api.expect(200, 'GET', '/v1/nodes?detail=true')).body as {
        nodes: Array<Record<string, unknown>>;
      };
      expect(nodes.nodes).toHaveLength(3);
      for (const [i, index] of [4, 5, 6].entries()) {
        const uuid = uuids[i] as string;
        const node = await lab.api.waitForNode(uuid, 'to have its properties', ACTION_TIMEOUT_MS, 250, inspected);
        expect(node).toMatchObject({
          name: `rack-E2E-SN-${index}`,
          provision_state: 'enroll',
          inspect_interface: 'agent',
          power_interface: 'qemu',
          properties: { cpus: 1, memory_mb: 128, local_gb: 4, cpu_arch: 'x86_64' },
        });
        const ports = await lab.api.expect(200, 'GET', `/v1/nodes/${uuid}/ports?detail=true`);
        const portList = (ports.body as { ports: Array<{ address: string; pxe_enabled: boolean }> }).ports;
        expect(portList.map((p) => [p.address, p.pxe_enabled]).sort()).toEqual([
          [`52:54:00:e3:0${index}:01`, true],
          [`52:54:00:e3:0${index}:02`, false],
        ]);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
