// The lab's machines as nodes of the stack: enrolled (by name, again safely), listed, deleted.
import { readFile, writeFile } from 'node:fs/promises';
import type { ApiClient } from '@bmaas/api-client';
import type { LabBmcKind, LabDescription, LabMachine } from './lab-machines.js';
import type { LabPaths } from './lab-paths.js';

const ACTION_TIMEOUT_MS = 120_000;

/** The hardware type and power/management interfaces of each kind of lab BMC. */
const BMC_INTERFACES: Record<LabBmcKind, { driver: string; power_interface: string; management_interface: string }> = {
  ipmi: { driver: 'ipmi', power_interface: 'ipmitool', management_interface: 'ipmitool' },
  redfish: { driver: 'redfish', power_interface: 'redfish', management_interface: 'redfish' },
};

/** A node for a lab machine: its BMC's hardware type, iPXE boot, direct deploy. */
export function nodeBody(machine: LabMachine, deployImages: Record<string, string>): Record<string, unknown> {
  const { driver, ...interfaces } = BMC_INTERFACES[machine.bmc];
  return {
    name: machine.name,
    driver,
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    ...interfaces,
    // a cleaning boot would add minutes per machine; deploy is what the lab shows
    automated_clean: false,
    driver_info: { ...machine.driverInfo, ...deployImages },
  };
}

async function readEnrolled(paths: LabPaths): Promise<string[]> {
  try {
    return JSON.parse(await readFile(paths.nodesFile, 'utf8')) as string[];
  } catch {
    return [];
  }
}

/**
 * Creates each machine's node and port unless they exist (found by name and MAC); an existing
 * node gets the BMC's current driver_info. New nodes are managed, then provided (available).
 */
export async function enrolMachines(
  api: ApiClient,
  paths: LabPaths,
  machines: readonly LabMachine[],
  deployImages: Record<string, string>,
): Promise<void> {
  const enrolled = new Set(await readEnrolled(paths));
  await Promise.all(
    machines.map(async (machine) => {
      const body = nodeBody(machine, deployImages);
      const found = await api.request('GET', `/v1/nodes/${machine.name}`);
      let node = found.body;
      if (found.status === 404) {
        node = (await api.expect(201, 'POST', '/v1/nodes', body)).body;
      } else if (found.status === 200) {
        const patch = Object.entries(body.driver_info as Record<string, unknown>).map(([key, value]) => ({
          op: 'add',
          path: `/driver_info/${key}`,
          value,
        }));
        node = (await api.expect(200, 'PATCH', `/v1/nodes/${node.uuid}`, patch)).body;
      } else {
        throw new Error(`GET /v1/nodes/${machine.name}: ${found.status} ${JSON.stringify(found.body)}`);
      }
      enrolled.add(machine.name);
      await writeFile(paths.nodesFile, JSON.stringify([...enrolled].sort()));
      const ports = (await api.expect(200, 'GET', `/v1/ports?address=${machine.mac}`)).body.ports as unknown[];
      if (ports.length === 0) {
        await api.expect(201, 'POST', '/v1/ports', { address: machine.mac, node_uuid: node.uuid });
      }
      if (node.provision_state === 'enroll') {
        node = await api.provisionAndWait(node.uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
      }
      if (node.provision_state === 'manageable') {
        await api.provisionAndWait(node.uuid, 'provide', 'available', ACTION_TIMEOUT_MS);
      }
    }),
  );
}

/**
 * Deploys each machine whose node is `available` with the lab's instance image and waits
 * (bounded) until it is `active`; a node already active is left alone. Returns the failures,
 * one line each; the other machines still finish.
 */
export async function deployMachines(
  api: ApiClient,
  lab: LabDescription,
  timeoutMs: number,
  progress: (line: string) => void,
): Promise<string[]> {
  const instanceInfo = Object.entries(lab.instanceInfo).map(([key, value]) => ({
    op: 'add',
    path: `/instance_info/${key}`,
    value,
  }));
  const failures: string[] = [];
  await Promise.all(
    lab.machines.map(async (machine) => {
      try {
        const node = (await api.expect(200, 'GET', `/v1/nodes/${machine.name}`)).body;
        if (node.provision_state === 'active') return;
        if (node.provision_state !== 'available') {
          throw new Error(`it is "${node.provision_state}", not available (last error: ${node.last_error})`);
        }
        await api.expect(200, 'PATCH', `/v1/nodes/${node.uuid}`, instanceInfo);
        const started = Date.now();
        progress(`${machine.name}: deploying (serial log ${machine.serialLog})`);
        await api.provisionAndWait(node.uuid, 'active', 'active', timeoutMs);
        progress(`${machine.name}: active after ${Math.round((Date.now() - started) / 1000)} s`);
      } catch (error) {
        failures.push(`${machine.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }),
  );
  return failures;
}

export interface NodeRow {
  name: string;
  uuid: string;
  mac: string;
  bmc: string;
  conductor: string;
  state: string;
  power: string;
  serialLog: string;
}

export async function nodeRows(api: ApiClient, lab: LabDescription): Promise<NodeRow[]> {
  return Promise.all(
    lab.machines.map(async (machine) => {
      const answer = await api.request('GET', `/v1/nodes/${machine.name}`);
      const node = answer.status === 200 ? answer.body : {};
      return {
        name: machine.name,
        uuid: node.uuid ?? '(not enrolled)',
        mac: machine.mac,
        bmc: `${machine.bmcAddress}:${machine.bmcPort}`,
        conductor: node.conductor ?? '-',
        state: node.provision_state ?? '-',
        power: node.power_state ?? '-',
        serialLog: machine.serialLog,
      };
    }),
  );
}

export function renderTable(rows: readonly NodeRow[]): string {
  const header: NodeRow = {
    name: 'NODE',
    uuid: 'UUID',
    mac: 'MAC',
    bmc: 'BMC (IPMI)',
    conductor: 'CONDUCTOR',
    state: 'STATE',
    power: 'POWER',
    serialLog: 'SERIAL LOG',
  };
  const keys = Object.keys(header) as Array<keyof NodeRow>;
  const all = [header, ...rows];
  const widths = keys.map((key) => Math.max(...all.map((row) => row[key].length)));
  return all
    .map((row) =>
      keys
        .map((key, i) => row[key].padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Deletes the nodes the lab enrolled (in maintenance first, so any provision state will do). */
export async function removeNodes(api: ApiClient, paths: LabPaths): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readEnrolled(paths)) {
    const found = await api.request('GET', `/v1/nodes/${name}`);
    if (found.status !== 200) continue;
    await api.expect(202, 'PUT', `/v1/nodes/${name}/maintenance`, { reason: 'npm run lab -- --down' });
    await api.expect(204, 'DELETE', `/v1/nodes/${name}`);
    removed.push(name);
  }
  await writeFile(paths.nodesFile, '[]');
  return removed;
}
