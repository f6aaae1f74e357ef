import { ApiClient, type NodeAnswer } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { beforeAll, describe, expect, it } from 'vitest';
import { useRestStack } from '../support/rest-stack.js';

/**
 * Discovery on ([discovery]enabled): unknown machines' inventories posted to
 * POST /v1/continue_inspection enrol them (node in enroll, a port per NIC,
 * properties, stored inventory, a name from the template), concurrent posts
 * never make duplicates, a known MAC never makes a new node; /v1/boot
 * answers unknown MACs each boot interface's discovery configuration,
 * rendered by a conductor (iPXE's discovery.ipxe, GRUB's grub.cfg). API + three conductors on one
 * test database. Discovery off is covered by inspection.test.ts.
 */

const GIB = 1024 ** 3;
let rest: ApiClient;

function machine(index: number): { macs: string[]; inventory: Record<string, unknown> } {
  const macs = [
    `52:54:00:d1:${index.toString(16).padStart(2, '0')}:01`,
    `52:54:00:d1:${index.toString(16).padStart(2, '0')}:02`,
  ];
  return {
    macs,
    inventory: {
      interfaces: macs.map((mac, i) => ({ name: `eth${i}`, mac_address: mac, ipv4_address: null })),
      cpu: { count: index, architecture: 'x86_64' },
      memory: { total: index * 256 * 1024 ** 2, physical_mb: index * 256 },
      disks: [{ name: '/dev/vda', size: (4 + index) * GIB }],
      boot: { current_boot_mode: 'bios', pxe_interface: macs[0] },
      system_vendor: { serial_number: `SN ${index}/x` },
      bmc_address: `192.0.2.${index}`,
    },
  };
}

function post(inventory: Record<string, unknown>) {
  return rest.request<{ uuid: string }>(
    'POST',
    '/v1/continue_inspection',
    { inventory },
    {
      'X-OpenStack-Ironic-API-Version': '',
    },
  );
}

async function nodesByMac(mac: string): Promise<string[]> {
  const answer = await rest.request<{ ports: Array<{ node_uuid: string }> }>(
    'GET',
    `/v1/ports?address=${mac}&detail=true`,
  );
  return answer.body.ports.map((p) => p.node_uuid);
}

const lab = useRestStack({
  BMAAS_API__PUBLIC_ENDPOINT: 'http://192.0.2.1:6385',
  BMAAS_DISCOVERY__ENABLED: 'true',
  BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe,grub',
  BMAAS_DISCOVERY__DRIVER: 'fake-hardware',
  BMAAS_DISCOVERY__INTERFACES: 'inspect:agent',
  BMAAS_DISCOVERY__NAME_TEMPLATE: 'disc-{serial}',
  BMAAS_DISCOVERY__DEPLOY_KERNEL: 'http://192.0.2.9:8080/ipa.kernel',
  BMAAS_DISCOVERY__DEPLOY_RAMDISK: 'http://192.0.2.9:8080/ipa.initramfs',
});

beforeAll(() => {
  rest = new ApiClient(lab.apiUrl, { version: '1.81' });
});

describe('discovery through the REST API, three conductors', () => {
  it('answers an unknown MAC the discovery script, and only that name', async () => {
    const answer = await fetch(`${lab.apiUrl}/v1/boot/52-54-00-d1-ff-01/discovery.ipxe`);
    expect(answer.status).toBe(200);
    const script = await answer.text();
    expect(script).toMatch(/^#!ipxe\n/);
    expect(script).toContain('kernel http://192.0.2.9:8080/ipa.kernel ');
    expect(script).toContain('ipa-inspection-callback-url=http://192.0.2.1:6385/v1/continue_inspection');
    expect(script).toContain('initrd --name discovery_ramdisk http://192.0.2.9:8080/ipa.initramfs');
    expect((await fetch(`${lab.apiUrl}/v1/boot/52-54-00-d1-ff-01/boot.ipxe`)).status).toBe(404);
  });

  it("answers an unknown UEFI machine's grub.cfg with GRUB's discovery config", async () => {
    const answer = await fetch(`${lab.apiUrl}/v1/boot/52-54-00-d1-ff-02/grub.cfg`);
    expect(answer.status).toBe(200);
    const config = await answer.text();
    expect(config).toContain('linux (http,192.0.2.9:8080)/ipa.kernel ');
    expect(config).toContain('ipa-inspection-callback-url=http://192.0.2.1:6385/v1/continue_inspection');
    expect(config).toContain('initrd (http,192.0.2.9:8080)/ipa.initramfs\n');
    expect((await fetch(`${lab.apiUrl}/v1/boot/52-54-00-d1-ff-02/other.cfg`)).status).toBe(404);
  });

  it('three machines posting at once (one of them twice) become three nodes with ports, properties and names', async () => {
    const machines = [1, 2, 3].map(machine);
    const answers = await Promise.all(
      [...machines, machines[0]].map((m) => post((m as ReturnType<typeof machine>).inventory)),
    );
    // The two posts of machine 1: whichever came first enrolled it; the other is refused like any known machine.
    expect([answers[0]?.status, answers[3]?.status].sort()).toEqual([202, 404]);
    const first = answers[0]?.status === 202 ? answers[0] : answers[3];
    const winners = [first, answers[1], answers[2]];
    for (const answer of winners) expect(answer?.status, answer?.text).toBe(202);
    const uuids = winners.map((answer) => answer?.body.uuid as string);
    expect(new Set(uuids).size).toBe(3);

    for (const [i, m] of machines.entries()) {
      const index = i + 1;
      for (const mac of m.macs) expect(await nodesByMac(mac)).toEqual([uuids[i]]);
      const node = await waitFor(
        `properties of discovered node ${index}`,
        async () => {
          const n = await rest.node(uuids[i] as string);
          return (n.properties as Record<string, unknown>).cpus !== undefined && n.reservation === null ? n : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      expect(node).toMatchObject({
        name: `disc-SN-${index}-x`,
        provision_state: 'enroll',
        driver: 'fake-hardware',
        inspect_interface: 'agent',
        properties: { cpus: index, memory_mb: index * 256, local_gb: 3 + index, cpu_arch: 'x86_64' },
      });
      const ports = await rest.request<{ ports: Array<{ address: string; pxe_enabled: boolean }> }>(
        'GET',
        `/v1/nodes/${node.uuid}/ports?detail=true`,
      );
      expect(ports.body.ports.map((p) => [p.address, p.pxe_enabled]).sort()).toEqual([
        [m.macs[0], true],
        [m.macs[1], false],
      ]);
      const inventory = await rest.request<{ inventory: unknown }>('GET', `/v1/nodes/${node.uuid}/inventory`);
      expect(inventory.body.inventory).toEqual(m.inventory);
    }
    const all = await rest.request<{ nodes: NodeAnswer[] }>('GET', '/v1/nodes');
    expect(all.body.nodes).toHaveLength(3);
  });

  it('a MAC that belongs to an existing node never creates a new one', async () => {
    const node = await rest.createNode({ driver: 'fake-hardware', name: 'known' });
    const known = machine(9);
    await rest.createPort(node.uuid, known.macs[1] as string);
    const before = (await rest.request<{ nodes: NodeAnswer[] }>('GET', '/v1/nodes')).body.nodes.length;
    // The machine is known (and not waiting for inspection): refused like any lookup miss, nothing created.
    const answer = await post(known.inventory);
    expect(answer.status).toBe(404);
    expect((await rest.request<{ nodes: NodeAnswer[] }>('GET', '/v1/nodes')).body.nodes).toHaveLength(before);
    expect(await nodesByMac(known.macs[0] as string)).toEqual([]);
  });
});
