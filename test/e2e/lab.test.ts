// Self-test of the e2e lab harness, without the product: a fake API (fake-agent-api.ts)
// serves iPXE scripts and the test ramdisk, whose agent looks itself up, listens and heartbeats.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withTimeout } from '@bmaas/common';
import {
  buildTestRamdisk,
  type Dnsmasq,
  GUESTFWD_ADDRESS,
  LabNetwork,
  listInitrd,
  netnsUnavailableReason,
  type QemuMachine,
  startDnsmasq,
  startQemuMachine,
  type TestRamdisk,
} from '@bmaas/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingPrerequisite } from '../support/prerequisites.js';
import { createFakeAgentApi, type FakeAgentApi } from './fake-agent-api.js';
import { missingLabTools } from './lib/prerequisites.js';

const CACHE_DIR = process.env.BMAAS_E2E_CACHE ?? fileURLToPath(new URL('./.cache', import.meta.url));
const API_PORT = 6385;
// One TCG boot to power-off takes 10-25 s alone; the other e2e files emulate up to eight
// machines on the same two cores at the same time.
const BOOT_TIMEOUT_MS = 240_000;

// Unavailable tools or privileges skip tests loudly (as `npm test` promises when it cannot install packages).
const missingTools = await missingLabTools();
const labProblem = missingTools.length > 0 ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)` : null;
const netnsProblem = labProblem ?? (await netnsUnavailableReason());
const skipLab = missingPrerequisite('lab.test', labProblem);
const skipNetns = skipLab || missingPrerequisite('lab.test namespace + dnsmasq variant', netnsProblem);

let ramdisk: TestRamdisk;
beforeAll(async () => {
  if (!labProblem) ramdisk = await buildTestRamdisk(CACHE_DIR);
}, 300_000);

describe.skipIf(skipLab)('test ramdisk', () => {
  it('is cached and holds the agent script, busybox and the virtio-net modules', async () => {
    const builtAt = (await stat(ramdisk.initrd)).mtimeMs;
    const again = await buildTestRamdisk(CACHE_DIR);
    expect(again).toEqual(ramdisk);
    expect((await stat(again.initrd)).mtimeMs, 'served from the cache, not rebuilt').toBe(builtAt);
    const files = await listInitrd(ramdisk.initrd);
    expect(files).toEqual(
      expect.arrayContaining(['init', 'bin/sh', 'bin/busybox', 'etc/udhcpc.script', 'lib/modules/load-order']),
    );
    expect(files).toContain('lib/modules/virtio_net.ko');
    // the agent converts qcow2 images: qemu-img and the libraries it loads
    expect(files).toEqual(expect.arrayContaining(['usr/bin/qemu-img', 'lib64/ld-linux-x86-64.so.2']));
  }, 120_000);
});

describe.skipIf(skipNetns)('lab: network namespace + dnsmasq + tap (needs root)', () => {
  const macs = ['52:54:00:e2:e0:01', '52:54:00:e2:e0:04'];
  let work: string | undefined;
  let api: FakeAgentApi | undefined;
  let network: LabNetwork | undefined;
  let dnsmasq: Dnsmasq | undefined;
  const machines: QemuMachine[] = [];

  afterAll(async () => {
    await Promise.all(machines.map((machine) => machine.stop()));
    await dnsmasq?.stop();
    await network?.destroy();
    await api?.close();
    if (work) await rm(work, { recursive: true, force: true });
  }, 30_000);

  it('boots two machines at once by DHCP and iPXE into the ramdisk, whose agent looks up, listens and heartbeats', async () => {
    work = await mkdtemp(join(tmpdir(), 'bmaas-e2e-'));
    api = createFakeAgentApi({ ramdisk, macs, bootifStyle: 'ironic' });
    const apiSocket = join(work, 'api.sock');
    await api.listenUnix(apiSocket);
    network = await LabNetwork.create();
    await network.portToHostSocket(network.ipv4, API_PORT, apiSocket);
    const dhcp = await startDnsmasq({
      network,
      bootUrl: `http://${network.ipv4}:${API_PORT}/boot.ipxe`,
      workDir: work,
    });
    dnsmasq = dhcp;

    for (const [index, mac] of macs.entries()) {
      const net = { kind: 'tap', network, tap: await network.addTap() } as const;
      machines.push(await startQemuMachine({ name: `node${index}`, mac, net, workDir: work, paused: true }));
    }
    // both start paused (-S); QMP starts them together
    const startedAt = Date.now();
    for (const machine of machines) {
      const qmp = await machine.qmp();
      expect(await qmp.queryStatus()).toMatchObject({ status: 'prelaunch', running: false });
      await qmp.cont();
      expect(await qmp.queryStatus()).toMatchObject({ status: 'running', running: true });
    }

    const ips = await Promise.all(macs.map((mac) => dhcp.waitForDhcpAck(mac, 120_000)));
    expect(new Set(ips).size).toBe(macs.length);
    for (const ip of ips) expect(ip).toMatch(/^192\.168\.77\.\d+$/);
    // the agent keeps serving and heartbeating until a conductor powers it off: the harness stops it
    await Promise.all(machines.map((machine) => machine.waitForSerial(/E2E-HEARTBEAT ok status=202/, BOOT_TIMEOUT_MS)));
    for (const machine of machines) await machine.stop();

    for (const [index, machine] of machines.entries()) await expectAgentConversation(api, machine, ips[index] ?? '');
    await report('netns', api, machines, startedAt);
  }, 300_000);
});

describe.skipIf(skipLab)('lab: QEMU user-mode networking (restrict=on, guestfwd)', () => {
  const mac = '52:54:00:e2:e0:02';
  const guestPort = 8080;
  let work: string | undefined;
  let api: FakeAgentApi | undefined;
  let machine: QemuMachine | undefined;

  afterAll(async () => {
    await machine?.stop();
    await api?.close();
    if (work) await rm(work, { recursive: true, force: true });
  }, 30_000);

  it('boots by slirp DHCP and iPXE into the ramdisk, whose agent looks up, listens and heartbeats', async () => {
    work = await mkdtemp(join(tmpdir(), 'bmaas-e2e-'));
    api = createFakeAgentApi({ ramdisk, macs: [mac], bootifStyle: 'pxelinux' });
    const hostPort = await api.listenTcp('127.0.0.1');
    const startedAt = Date.now();
    machine = await startQemuMachine({
      name: 'slirp0',
      mac,
      workDir: work,
      net: {
        kind: 'user',
        bootUrl: `http://${GUESTFWD_ADDRESS}:${guestPort}/boot.ipxe`,
        forwards: [{ guestPort, hostPort }],
      },
    });

    await machine.waitForSerial(/E2E-HEARTBEAT ok status=202/, BOOT_TIMEOUT_MS);
    await machine.stop();
    await expectAgentConversation(api, machine, '10.0.2.15'); // slirp's first guest address
    await report('user-mode', api, [machine], startedAt);
  }, 300_000);
});

describe.skipIf(skipLab)('lab: QMP', () => {
  let work: string | undefined;
  let machine: QemuMachine | undefined;

  afterAll(async () => {
    await machine?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  }, 30_000);

  it('holds a paused machine, accepts system_powerdown and ends QEMU with quit', async () => {
    work = await mkdtemp(join(tmpdir(), 'bmaas-e2e-'));
    machine = await startQemuMachine({
      name: 'idle',
      mac: '52:54:00:e2:e0:03',
      workDir: work,
      paused: true,
      net: { kind: 'user', forwards: [] },
    });
    const qmp = await machine.qmp();
    expect((await qmp.queryStatus()).status).toBe('prelaunch');
    await qmp.systemPowerdown(); // no guest runs to act on it; QEMU must still accept it
    await qmp.quit();
    expect(await withTimeout(machine.exited, 10_000, 'qemu exit after quit')).toEqual({ code: 0, signal: null });
    expect(machine.isRunning()).toBe(false);
  }, 30_000);
});

/**
 * The exchange a real deploy ramdisk has with the API, as recorded by the fake and seen on the console.
 * Each request is looked for after the previous one, which also checks their order.
 */
async function expectAgentConversation(api: FakeAgentApi, machine: QemuMachine, guestIp: string): Promise<void> {
  const node = api.nodes.find((candidate) => candidate.mac === machine.mac);
  if (!node) throw new Error(`no fake node for ${machine.mac}`);
  const hexhyp = machine.mac.replaceAll(':', '-');
  const index = (what: string, after: number, test: (method: string, url: URL) => boolean): number => {
    const at = api.requests.findIndex(
      (request, i) => i > after && test(request.method, new URL(request.url, 'http://fake')),
    );
    const seen = api.requests.map((request) => `${request.method} ${request.url}`).join('\n');
    expect(at, `${what} after request #${after} in:\n${seen}`).toBeGreaterThanOrEqual(0);
    return at;
  };

  const wildcard = index('wildcard script', -1, (method, url) => method === 'GET' && url.pathname === '/boot.ipxe');
  const perMac = index(
    'per-MAC script',
    wildcard,
    (method, url) => method === 'GET' && url.pathname === `/v1/boot/${hexhyp}/boot.ipxe`,
  );
  const kernel = index('kernel', perMac, (method, url) => method === 'GET' && url.pathname === '/e2e/kernel');
  const initrd = index('initrd', kernel, (method, url) => method === 'GET' && url.pathname === '/e2e/initrd');
  const lookup = index(
    'lookup',
    initrd,
    (method, url) =>
      method === 'GET' &&
      url.pathname === '/v1/lookup' &&
      (url.searchParams.get('addresses') ?? '').split(',').includes(machine.mac),
  );
  const heartbeat = index(
    'heartbeat',
    lookup,
    (method, url) => method === 'POST' && url.pathname === `/v1/heartbeat/${node.uuid}`,
  );
  expect(api.requests[wildcard]?.headers['user-agent']).toMatch(/^iPXE\//);

  const lookupRequest = api.requests[lookup];
  expect(lookupRequest?.headers['x-openstack-ironic-api-version']).toBe('1.82');

  const heartbeatRequest = api.requests[heartbeat];
  // 1.62: the agent serves plain HTTP, so it must not ask for auto-TLS (1.68)
  expect(heartbeatRequest?.headers['x-openstack-ironic-api-version']).toBe('1.62');
  expect(heartbeatRequest?.headers['content-type']).toBe('application/json');
  expect(JSON.parse(heartbeatRequest?.body ?? '')).toEqual({
    callback_url: `http://${guestIp}:9999`,
    agent_token: node.agentToken,
    agent_version: 'e2e-ramdisk',
  });

  const serial = await machine.readSerial();
  expect(serial).toMatch(/iPXE/);
  expect(serial).toMatch(/E2E-RAMDISK up/);
  expect(serial).toContain(`E2E-NICS macs=${machine.mac} bootif=${machine.mac}`);
  expect(serial).toContain(`E2E-DHCP ok iface=eth0 ip=${guestIp}`);
  expect(serial).toContain(`E2E-LOOKUP ok node=${node.uuid} heartbeat_timeout=300`);
  expect(serial).toContain(`E2E-AGENT listening port=9999 callback=http://${guestIp}:9999`);
  expect(serial).toContain('E2E-HEARTBEAT ok status=202');
  expect(serial).not.toMatch(/E2E-FAILED|E2E-WARN/);
}

/** Prints when each request arrived (seconds after QEMU started) and each ramdisk's markers (up= is guest uptime). */
async function report(variant: string, api: FakeAgentApi, machines: QemuMachine[], startedAt: number): Promise<void> {
  const lines = api.requests.map(
    (request) => `  +${((request.at - startedAt) / 1000).toFixed(1)}s ${request.method} ${request.url}`,
  );
  for (const machine of machines) {
    const markers = (await machine.readSerial()).split('\n').flatMap((line) => /E2E-.*/.exec(line.trimEnd()) ?? []);
    lines.push(`  ${machine.name} serial:`, ...markers.map((marker) => `    ${marker}`));
  }
  console.log(`[lab.test] ${variant} timeline:\n${lines.join('\n')}`);
}
