// `npm run lab` against the stack `npm start` runs: the launcher on free ports with its own
// state directory, then the lab command (its built bin, as npm runs it) with two machines
// behind IPMI BMCs; both are deployed through the boot configuration API with the image the
// lab built, then --status, a re-run, --down, and a second lab that goes away with the stack.
// Each step is bounded; afterAll stops whatever is still running, by PID.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '@bmaas/api-client';
import { freePort, freePortBlock, waitFor } from '@bmaas/common';
import { stateTempDir } from '@bmaas/db/testing';
import { askLab, type LabDescription, labPaths, netnsUnavailableReason, run } from '@bmaas/lab';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installLogin, StackRun, stackEnvironment, stillRunning } from '../stack/stack-run.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { missingLabTools } from './lib/prerequisites.js';

const LABEL = 'npm-lab';
const LAB_MAIN = fileURLToPath(new URL('../../packages/lab/dist/main.js', import.meta.url));
const MACHINES = 2;
const START_TIMEOUT_MS = 120_000;
/** Building the ramdisk and image on a cold cache, then starting and enrolling the machines. */
const LAB_UP_TIMEOUT_MS = 600_000;
/** Two machines deploying at once on two emulating cores (about 2.5 min measured for three). */
const DEPLOY_TIMEOUT_MS = 600_000;
const STOP_TIMEOUT_MS = 90_000;

const missingTools = await missingLabTools();
const noIpmi = ['ipmi_sim', 'ipmitool'].filter((tool) =>
  (process.env.PATH ?? '').split(':').every((dir) => dir === '' || !existsSync(join(dir, tool))),
);
const problem =
  missingTools.length + noIpmi.length > 0
    ? `missing ${[...missingTools, ...noIpmi].join(', ')} (see test/debian-packages.txt)`
    : !existsSync(LAB_MAIN)
      ? `${LAB_MAIN} is missing: build first (npm run build)`
      : await netnsUnavailableReason();

interface LabRun {
  code: number | null;
  output: string;
}

describe.skipIf(missingPrerequisite(LABEL, problem))('npm run lab next to npm start (lab network as root)', () => {
  let stateDir: string;
  let stack: StackRun | undefined;
  let api: ApiClient;
  const labChildren: ChildProcess[] = [];

  /** The lab command as `npm run lab -- ARGS` runs it, to its exit (bounded). */
  function lab(args: readonly string[], timeoutMs: number): Promise<LabRun> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [LAB_MAIN, ...args], {
        env: { ...process.env, BMAAS_DEFAULT__STATE_PATH: stateDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      labChildren.push(child);
      let output = '';
      for (const stream of [child.stdout, child.stderr]) stream?.on('data', (c: Buffer) => (output += c.toString()));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`lab ${args.join(' ')}: no exit within ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
  }

  /** What the lab process says about itself (over its control socket). */
  async function describeLab(): Promise<LabDescription> {
    const lab = await askLab(labPaths(stateDir), 'GET', '/lab');
    if (!lab) throw new Error('no lab process answers on its control socket');
    return lab;
  }

  /** Every PID the lab runs: itself, dnsmasq, the BMCs and the machines' QEMU. */
  function labPids(description: LabDescription): number[] {
    const qemu = description.machines.flatMap((m) => {
      const file = join(labPaths(stateDir).dir, `${m.name}-bmc`, 'qemu.pid');
      return existsSync(file) ? [Number(readFileSync(file, 'utf8').trim())] : [];
    });
    return [description.pid, description.dnsmasqPid ?? 0, ...description.machines.map((m) => m.bmcPid), ...qemu].filter(
      (pid) => pid > 0,
    );
  }

  async function namespaces(): Promise<string[]> {
    return (await run('ip', ['netns', 'list'])).stdout.split('\n').map((line) => line.split(' ')[0] ?? '');
  }

  const until = (what: string, timeoutMs: number, done: () => boolean | Promise<boolean>): Promise<void> =>
    waitFor(what, async () => ((await done()) ? true : undefined), { timeoutMs, intervalMs: 500 }).then(() => {});

  beforeAll(async () => {
    // short: QMP sockets live under it (107-byte limit)
    stateDir = stateTempDir('bmlab-');
    const apiPort = await freePort();
    const databasePort = await freePort();
    stack = new StackRun(
      [
        '--api-port',
        String(apiPort),
        '--json-rpc-base-port',
        String(await freePortBlock(3)),
        '--http-base-port',
        String(await freePortBlock(3)),
      ],
      stackEnvironment(
        stateDir,
        databasePort,
        process.env.BMAAS_E2E_CACHE ? { BMAAS_E2E_CACHE: process.env.BMAAS_E2E_CACHE } : {},
      ),
    );
    await stack.waitForOutput(/The stack is running/, START_TIMEOUT_MS);
    api = new ApiClient(`http://127.0.0.1:${apiPort}`, { headers: { Authorization: installLogin(stateDir) } });
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    for (const child of labChildren) if (child.exitCode === null) child.kill('SIGKILL');
    const pid = existsSync(labPaths(stateDir).pidFile)
      ? Number(readFileSync(labPaths(stateDir).pidFile, 'utf8').split('\n')[0])
      : 0;
    if (pid > 0 && stillRunning([pid]).length > 0) process.kill(pid, 'SIGTERM');
    if (stack?.running) {
      stack.signal('SIGTERM');
      await stack.waitForExit(STOP_TIMEOUT_MS).catch(() => stack?.killGroup());
    }
    if (pid > 0) await until('the lab process stopping', STOP_TIMEOUT_MS, () => stillRunning([pid]).length === 0);
    rmSync(stateDir, { recursive: true, force: true });
  }, 3 * STOP_TIMEOUT_MS);

  it('without a stack, says so in one line and exits non-zero', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'bmlab-none-'));
    try {
      const answer = await lab(['--state-dir', empty], 30_000);
      expect(answer.code).toBe(1);
      expect(answer.output.trim().split('\n')).toHaveLength(1);
      expect(answer.output).toMatch(/No stack is running from .*npm start/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  const uuids: string[] = [];
  let instanceInfo: Record<string, string> = {};

  it(
    `starts ${MACHINES} machines behind BMCs, enrols them and prints the table`,
    async () => {
      const up = await lab(['--machines', String(MACHINES)], LAB_UP_TIMEOUT_MS);
      expect(up.code, up.output).toBe(0);
      const description = await describeLab();
      expect(description.network).toBe('netns');
      expect(description.machines.map((m) => m.name)).toEqual(['lab-1', 'lab-2']);
      instanceInfo = description.instanceInfo;
      expect(up.output).toContain(`image_source=${instanceInfo.image_source}`);
      for (const machine of description.machines) {
        const node = (await api.expect(200, 'GET', `/v1/nodes/${machine.name}`)).body;
        expect(node).toMatchObject({ driver: 'ipmi', provision_state: 'available', power_state: 'power off' });
        expect(node.driver_info.ipmi_port).toBe(machine.bmcPort);
        const row = up.output.split('\n').find((line) => line.startsWith(`${machine.name} `)) ?? '';
        expect(row).toContain(node.uuid);
        expect(row).toContain(machine.mac);
        expect(row).toContain(`127.0.0.1:${machine.bmcPort}`);
        expect(row).toContain(node.conductor);
        expect(row).toContain(machine.serialLog);
        const ports = (await api.expect(200, 'GET', `/v1/ports?address=${machine.mac}`)).body.ports;
        expect(ports).toHaveLength(1);
        uuids.push(node.uuid);
      }
    },
    LAB_UP_TIMEOUT_MS + 10_000,
  );

  it(
    '--deploy deploys every machine with the lab image: ramdisk through the boot configuration API, image written, disk booted',
    async () => {
      const description = await describeLab();
      // `--deploy` on the running lab: it finds its machines and deploys each with the lab's image.
      const deploy = await lab(['--machines', String(MACHINES), '--deploy'], DEPLOY_TIMEOUT_MS);
      expect(deploy.code, deploy.output).toBe(0);
      for (const machine of description.machines)
        expect(deploy.output).toMatch(new RegExp(`${machine.name}: active after \\d+ s`));
      const deployed = await Promise.all(
        description.machines.map(async (machine) => (await api.expect(200, 'GET', `/v1/nodes/${machine.name}`)).body),
      );
      for (const [index, node] of deployed.entries()) {
        const machine = description.machines[index] as LabDescription['machines'][number];
        expect(node).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
        const hexhyp = machine.mac.replaceAll(':', '-');
        await until(`${machine.name} booting its disk`, 180_000, () =>
          readFileSync(machine.serialLog, 'utf8').includes('INSTANCE-UP from disk'),
        );
        const serial = readFileSync(machine.serialLog, 'utf8');
        expect(serial).toMatch(new RegExp(`http://10\\.0\\.2\\.100:\\d+/v1/boot/${hexhyp}/boot\\.ipxe\\.\\.\\. ok`));
      }
    },
    DEPLOY_TIMEOUT_MS + 200_000,
  );

  it('--status lists the machines with their nodes; a re-run finds what exists', async () => {
    const status = await lab(['--status'], 60_000);
    expect(status.code, status.output).toBe(0);
    for (const uuid of uuids) expect(status.output).toMatch(new RegExp(`${uuid} .* active`));
    const again = await lab(['--machines', String(MACHINES)], 120_000);
    expect(again.code, again.output).toBe(0);
    const nodes = (await api.expect(200, 'GET', '/v1/nodes')).body.nodes as Array<{ uuid: string }>;
    expect(nodes.map((n) => n.uuid).sort()).toEqual([...uuids].sort());
  }, 200_000);

  it(
    '--down removes the machines, BMCs, dnsmasq, namespace and nodes',
    async () => {
      const description = await describeLab();
      const pids = labPids(description);
      expect(pids.length).toBeGreaterThanOrEqual(2 + 2 * MACHINES);
      const down = await lab(['--down'], STOP_TIMEOUT_MS);
      expect(down.code, down.output).toBe(0);
      expect(stillRunning(pids)).toEqual([]);
      expect(await namespaces()).not.toContain(description.namespace);
      for (const uuid of uuids) expect((await api.request('GET', `/v1/nodes/${uuid}`)).status).toBe(404);
    },
    STOP_TIMEOUT_MS + 10_000,
  );

  it(
    'a lab goes away with the stack: nothing of it is left once npm start stops',
    async () => {
      const up = await lab(['--machines', '1'], 300_000);
      expect(up.code, up.output).toBe(0);
      const description = await describeLab();
      const pids = labPids(description);
      stack?.signal('SIGTERM');
      await stack?.waitForExit(STOP_TIMEOUT_MS);
      await until('the lab stopping after the stack', STOP_TIMEOUT_MS, () => stillRunning(pids).length === 0);
      expect(await namespaces()).not.toContain(description.namespace);
      const status = await lab(['--status'], 30_000);
      expect(status.code).toBe(1);
    },
    300_000 + 3 * STOP_TIMEOUT_MS,
  );
});
