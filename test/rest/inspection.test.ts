import { ApiClient, ironicFault, type NodeAnswer } from '@bmaas/api-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useRestStack } from '../support/rest-stack.js';

/**
 * In-band inspection (`agent` inspect interface) through the REST API and
 * three real conductors on one test database: inspect → inspect wait, the
 * ramdisk's POST /v1/continue_inspection (no version header, no
 * credentials, as ironic-python-agent sends it), properties and ports from
 * the inventory, GET …/inventory; abort and the inspect wait timeout. Fake
 * power and boot interfaces: no machine boots here (test/e2e does that).
 */

const GIB = 1024 ** 3;
/** Seconds a node may wait in "inspect wait" here (the periodic check runs every second). */
const INSPECT_WAIT_TIMEOUT = 8;

let rest: ApiClient;
let anonymous: ApiClient;
let macCounter = 0;

function mac(): string {
  macCounter += 1;
  return `52:54:00:${(0x10 + (process.pid % 200)).toString(16)}:00:${macCounter.toString(16).padStart(2, '0')}`;
}

function inventoryOf(macs: string[], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    interfaces: [
      { name: 'lo', mac_address: '00:00:00:00:00:00' },
      ...macs.map((address, i) => ({
        name: `eth${i}`,
        mac_address: address,
        ipv4_address: i === 0 ? '192.0.2.10' : null,
      })),
    ],
    cpu: { count: 2, architecture: 'x86_64', model_name: 'QEMU Virtual CPU' },
    memory: { total: 768 * 1024 ** 2 - 65536, physical_mb: 768 },
    disks: [
      { name: '/dev/vda', size: 6 * GIB, rotational: true, serial: 'first' },
      { name: '/dev/vdb', size: 12 * GIB, rotational: true, serial: 'second' },
    ],
    boot: { current_boot_mode: 'bios', pxe_interface: macs[0] },
    system_vendor: { product_name: 'Standard PC', serial_number: 'SN-1', manufacturer: 'QEMU' },
    ...overrides,
  };
}

/** A node with the agent inspect interface and a port for its booting NIC, in manageable. */
async function manageableNode(
  name: string,
  bootMac: string,
  fields: Record<string, unknown> = {},
): Promise<NodeAnswer> {
  const node = await rest.createNode({ driver: 'fake-hardware', name, inspect_interface: 'agent', ...fields });
  await rest.createPort(node.uuid, bootMac);
  expect((await rest.provision(node.uuid, 'manage')).status).toBe(202);
  return rest.settled(node.uuid, 'manageable', 30_000);
}

async function inspectWait(node: NodeAnswer): Promise<NodeAnswer> {
  const answer = await rest.provision(node.uuid, 'inspect');
  expect(answer.status, answer.text).toBe(202);
  return rest.settled(node.uuid, 'inspect wait', 30_000);
}

function postInventory(body: Record<string, unknown>) {
  return anonymous.request<Record<string, unknown>>('POST', '/v1/continue_inspection', body, {
    'X-OpenStack-Ironic-API-Version': '',
  });
}

async function ports(nodeUuid: string): Promise<Array<{ address: string; pxe_enabled: boolean }>> {
  const answer = await rest.request<{ ports: Array<{ address: string; pxe_enabled: boolean }> }>(
    'GET',
    `/v1/nodes/${nodeUuid}/ports?detail=true`,
  );
  expect(answer.status).toBe(200);
  return answer.body.ports.map((p) => ({ address: p.address, pxe_enabled: p.pxe_enabled }));
}

const lab = useRestStack({
  BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
  BMAAS_INSPECTOR__ADD_PORTS: 'all',
  BMAAS_CONDUCTOR__INSPECT_WAIT_TIMEOUT: String(INSPECT_WAIT_TIMEOUT),
});

beforeAll(() => {
  rest = new ApiClient(lab.apiUrl, { version: '1.81' });
  anonymous = new ApiClient(lab.apiUrl);
});

describe('in-band inspection through the REST API, three conductors', () => {
  it('inspect → inspect wait; the inventory sets properties, adds the second NIC as a port, powers off → manageable', async () => {
    const [boot, second] = [mac(), mac()];
    const node = await inspectWait(await manageableNode('inspect-ok', boot));
    expect(node.power_state).toBe('power on');
    expect(node.inspection_started_at).not.toBeNull();

    const answer = await postInventory({ inventory: inventoryOf([boot, second]), error: null, logs: 'H4sI' });
    expect(answer.status, answer.text).toBe(202);
    expect(answer.body).toEqual({ uuid: node.uuid });

    const done = await rest.settled(node.uuid, 'manageable', 30_000);
    expect(done).toMatchObject({
      target_provision_state: null,
      last_error: null,
      power_state: 'power off',
      properties: { cpus: 2, memory_mb: 768, local_gb: 5, cpu_arch: 'x86_64', capabilities: 'boot_mode:bios' },
    });
    expect(done.inspection_finished_at).not.toBeNull();
    expect(await ports(node.uuid)).toEqual(
      expect.arrayContaining([
        { address: boot, pxe_enabled: true },
        { address: second, pxe_enabled: false },
      ]),
    );
    expect(await ports(node.uuid)).toHaveLength(2);

    const inventory = await rest.request<Record<string, Record<string, unknown>>>(
      'GET',
      `/v1/nodes/inspect-ok/inventory`,
    );
    expect(inventory.status, inventory.text).toBe(200);
    expect(inventory.body.inventory).toEqual(inventoryOf([boot, second]));
    // Everything but the inventory and the ramdisk logs is plugin data.
    expect(inventory.body.plugin_data).toEqual({ error: null });
  });

  it('serves the inventory only from 1.81, and says when there is none', async () => {
    const node = await manageableNode('inspect-none', mac());
    const old = await new ApiClient(lab.apiUrl, { version: '1.78' }).request('GET', `/v1/nodes/${node.uuid}/inventory`);
    expect(old.status).toBe(404);
    const none = await rest.request('GET', `/v1/nodes/${node.uuid}/inventory`);
    expect(none.status).toBe(404);
    expect(ironicFault(none).faultstring).toBe(`Inventory not found for node ${node.uuid}.`);
  });

  it('picks local_gb from the disk the root device hints name', async () => {
    const boot = mac();
    const node = await manageableNode('inspect-hints', boot, { properties: { root_device: { size: 12 } } });
    await inspectWait(node);
    expect((await postInventory({ inventory: inventoryOf([boot]) })).status).toBe(202);
    const done = await rest.settled(node.uuid, 'manageable', 30_000);
    expect(done.properties).toMatchObject({ local_gb: 11, root_device: { size: 12 } });
  });

  it('refuses malformed root device hints on PATCH and create', async () => {
    const node = await manageableNode('inspect-bad-hints', mac());
    const patch = await rest.request('PATCH', `/v1/nodes/${node.uuid}`, [
      { op: 'add', path: '/properties/root_device', value: { size: 'huge' } },
    ]);
    expect(patch.status).toBe(400);
    expect(ironicFault(patch).faultstring).toMatch(/Invalid root device hints: size must be a positive integer/);
    const unknown = await rest.request('POST', '/v1/nodes', {
      driver: 'fake-hardware',
      properties: { root_device: { colour: 'red' } },
    });
    expect(unknown.status).toBe(400);
    const good = await rest.request('PATCH', `/v1/nodes/${node.uuid}`, [
      { op: 'add', path: '/properties/root_device', value: { serial: 'second', rotational: true } },
    ]);
    expect(good.status, good.text).toBe(200);
  });

  it('answers the same 404 for unknown MACs, a node not in inspect wait, and refuses a malformed body', async () => {
    const before = (await rest.request<{ nodes: unknown[] }>('GET', '/v1/nodes')).body.nodes.length;
    const unknown = mac();
    expect((await postInventory({ inventory: inventoryOf([unknown]) })).status).toBe(404);
    // Discovery is off: no node was made, and /v1/boot has no discovery script for the machine.
    expect((await rest.request<{ nodes: unknown[] }>('GET', '/v1/nodes')).body.nodes).toHaveLength(before);
    const script = await fetch(`${lab.apiUrl}/v1/boot/${unknown.replaceAll(':', '-')}/discovery.ipxe`);
    expect(script.status).toBe(404);
    const boot = mac();
    await manageableNode('inspect-not-waiting', boot);
    expect((await postInventory({ inventory: inventoryOf([boot]) })).status).toBe(404);
    expect((await postInventory({ inventory: { interfaces: [] } })).status).toBe(400);
    expect((await postInventory({ inventory: { interfaces: [{ name: 'eth0' }] } })).status).toBe(400);
    expect((await postInventory({})).status).toBe(400);
  });

  it('a bad inventory (no CPU architecture) ends in inspect failed, powered off', async () => {
    const boot = mac();
    const node = await inspectWait(await manageableNode('inspect-no-arch', boot));
    const answer = await postInventory({ inventory: inventoryOf([boot], { cpu: { count: 1 } }) });
    expect(answer.status).toBe(202);
    const failed = await rest.settled(node.uuid, 'inspect failed', 30_000);
    expect(failed.last_error).toMatch(/Failed to inspect node .*no CPU architecture/);
  });

  it('abort in inspect wait → inspect failed, machine powered off', async () => {
    const node = await inspectWait(await manageableNode('inspect-abort', mac()));
    const answer = await rest.provision(node.uuid, 'abort');
    expect(answer.status, answer.text).toBe(202);
    const failed = await rest.settled(node.uuid, 'inspect failed', 30_000);
    expect(failed.last_error).toBe('By request, the inspect operation was aborted.');
    expect(failed.power_state).toBe('power off');
  });

  it('an inventory that never comes: inspect failed with a clear last_error, machine powered off', async () => {
    const node = await inspectWait(await manageableNode('inspect-timeout', mac()));
    const failed = await rest.settled(node.uuid, 'inspect failed', (INSPECT_WAIT_TIMEOUT + 30) * 1000);
    expect(failed.last_error).toBe(
      `Timeout reached while waiting for callback for node ${node.uuid} (inspect, ${INSPECT_WAIT_TIMEOUT} s).`,
    );
    expect(failed.power_state).toBe('power off');
  });

  it('no-inspect refuses the inspect action', async () => {
    const node = await manageableNode('inspect-refused', mac(), { inspect_interface: 'no-inspect' });
    const answer = await rest.provision(node.uuid, 'inspect');
    expect(answer.status).toBe(400);
    expect(ironicFault(answer).faultstring).toMatch(/does not support inspect/);
  });
});
