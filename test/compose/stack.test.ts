// docker-compose.yml run for real: a Docker engine (the running one, or a dockerd started here,
// test/compose/lib/docker-engine.ts), the base images as local stand-ins built from Debian
// (docker/test-standins/build.sh: no image registry is needed), `up --build` of the working tree,
// then the stack driven as an operator drives it: the real `baremetal` CLI with the credentials
// the stack generated enrols a QEMU machine behind an ipmi_sim BMC (packages/lab), which
// network-boots through the dnsmasq container and the API's /v1/boot, is deployed to disk by
// its conductor's direct deploy and boots from disk; the owning conductor's container is killed
// (another conductor takes the machine over and serves its boot), `down` / `up` keep the
// volumes, and `down -v` leaves nothing. The provisioning network is a bridge of its own on
// this host (192.168.79.1/24), which dnsmasq (network_mode: host) serves and the conductors
// publish on; the machine's tap is a port of it, its BMC listens on 192.168.79.1:623, and the
// test ramdisk, the instance image and the deploy images are served from 192.168.79.1 too.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, waitFor } from '@bmaas/common';
import {
  addHostTap,
  buildInstanceImage,
  buildTestRamdisk,
  type HostRelay,
  IMAGE_CACHE_DIR,
  type ImageServer,
  type InstanceImage,
  type MachineBmc,
  RAMDISK_KERNEL_ARGS,
  startHostRelay,
  startImageServer,
  startMachineBmc,
} from '@bmaas/lab';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { missingLabTools } from '../e2e/lib/prerequisites.js';
import { BAREMETAL, baremetal } from '../support/baremetal-cli.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { type DockerEngine, engineProblem, ensureDockerEngine } from './lib/docker-engine.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const LABEL = 'compose stack';
const PROJECT = 'bmaas-compose-test';
const BRIDGE = 'bmcompose0';
const PROVISIONING_IP = '192.168.79.1';
const API = `http://${PROVISIONING_IP}:6385`;
const CONDUCTORS = ['conductor-1', 'conductor-2', 'conductor-3'];
const MAC = '52:54:00:c0:39:01';
const HTTP_PORT: Record<string, number> = { 'conductor-1': 8081, 'conductor-2': 8082, 'conductor-3': 8083 };
const MACHINE = 'compose-1';
const TAP = 'bmcompose-m0';
/** The machine's virtio disk, which the deploy writes the instance image to. */
const DISK_BYTES = 128 * 1024 * 1024;
/** The test ramdisk's agent serves plain HTTP: the conductors are told to accept it (see the file). */
const TEST_RAMDISK_OVERRIDE = join(REPO, 'test/compose/test-ramdisk.yml');
/** TCG emulation on two cores shared with the rest of the run. */
const DEPLOY_TIMEOUT_MS = 480_000;
const log = (line: string) => console.info(`[compose] ${line}`);

/** Debian 12's docker-compose (v1.29) when installed, else Compose v2 (`docker compose`); BMAAS_COMPOSE overrides. */
function composeCommand(): string[] {
  if (process.env.BMAAS_COMPOSE) return process.env.BMAAS_COMPOSE.split(' ');
  const v1 = ['/usr/bin/docker-compose', '/usr/local/bin/docker-compose'].find((path) => existsSync(path));
  return v1 ? [v1] : ['docker', 'compose'];
}

function problem(): string | null {
  const engine = engineProblem();
  if (engine) return engine;
  if (!existsSync('/usr/sbin/debootstrap')) return 'no debootstrap (apt-get install debootstrap)';
  if (!existsSync('/usr/bin/docker-compose')) return 'no docker-compose (apt-get install docker-compose)';
  if (!BAREMETAL) return 'no `baremetal` CLI (apt-get install python3-ironicclient)';
  for (const tool of ['/usr/bin/ipmi_sim', '/usr/bin/ipmitool']) {
    if (!existsSync(tool)) return `no ${tool} (see test/debian-packages.txt)`;
  }
  return null;
}

let engine: DockerEngine | undefined;
const CLIENT_NAMESPACE = 'bmcompose-client';
let clientNamespaceMade = false;
let workDir = '';
let bridgeMade = false;
let images: ImageServer | undefined;
let imagesRelay: HostRelay | undefined;
let imagesUrl = '';
let instanceImage: InstanceImage | undefined;
let removeTap: (() => Promise<void>) | undefined;
let bmc: MachineBmc | undefined;
let composeEnv: NodeJS.ProcessEnv = {};
let password = '';
const compose = composeCommand();
const timings: Record<string, number> = {};

async function sh(argv: string[], timeoutMs: number, env = composeEnv): Promise<string> {
  try {
    const { stdout } = await run(argv[0] as string, argv.slice(1), {
      env,
      cwd: REPO,
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${argv.join(' ')} failed: ${failed.message}\n${failed.stderr?.slice(-4000) ?? ''}`);
  }
}
/** The compose CLI as the operator guide runs it: `-p <project>` (Compose v1 has no top-level name:). */
const composeRun = (args: string[], timeoutMs = 120_000) =>
  sh(
    [...compose, '-p', PROJECT, '-f', join(REPO, 'docker-compose.yml'), '-f', TEST_RAMDISK_OVERRIDE, ...args],
    timeoutMs,
  );
const docker = (args: string[], timeoutMs = 60_000) => sh(['docker', ...args], timeoutMs);

/** The containers of one service (or all), by the labels both Compose v1 and v2 set. */
async function containers(service?: string, all = true): Promise<string[]> {
  const filters = ['--filter', `label=com.docker.compose.project=${PROJECT}`];
  if (service) filters.push('--filter', `label=com.docker.compose.service=${service}`);
  const out = await docker(['ps', '-q', ...(all ? ['-a'] : []), ...filters]);
  return out.split('\n').filter(Boolean);
}
async function containerOf(service: string): Promise<string> {
  const [id] = await containers(service);
  if (!id) throw new Error(`no container of ${service}`);
  return id;
}
interface ContainerState {
  Status: string;
  ExitCode: number;
  StartedAt: string;
  Health?: { Status: string };
}
async function stateOf(service: string): Promise<ContainerState & { RestartCount: number }> {
  const out = await docker(['inspect', '--format', '{{json .State}} {{.RestartCount}}', await containerOf(service)]);
  const space = out.trim().lastIndexOf(' ');
  return { ...JSON.parse(out.slice(0, space)), RestartCount: Number(out.slice(space + 1)) };
}
async function statesSummary(): Promise<string> {
  const lines: string[] = [];
  for (const name of ['postgres', 'dbsync', 'credentials', 'api', ...CONDUCTORS, 'dnsmasq']) {
    try {
      const s = await stateOf(name);
      lines.push(`${name}: ${s.Status}${s.Health ? `/${s.Health.Status}` : ''} (exit ${s.ExitCode})`);
    } catch (error) {
      lines.push(`${name}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  return lines.join('; ');
}

/** Every long-running service running and, where it has a health check, healthy; the one-shots exited 0. */
async function waitForHealthy(what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitFor(
    what,
    async () => {
      for (const name of ['dbsync', 'credentials']) {
        const s = await stateOf(name).catch(() => undefined);
        if (s?.Status === 'exited' && s.ExitCode !== 0) throw new Error(`${name} exited ${s.ExitCode}`);
        if (s?.Status !== 'exited') return undefined;
      }
      for (const name of ['postgres', 'api', ...CONDUCTORS]) {
        if ((await stateOf(name).catch(() => undefined))?.Health?.Status !== 'healthy') return undefined;
      }
      return (await stateOf('dnsmasq').catch(() => undefined))?.Status === 'running' ? true : undefined;
    },
    { timeoutMs, intervalMs: 2000, describe: statesSummary },
  );
  return (Date.now() - started) / 1000;
}

const cli = (args: string[]) => baremetal(API, args, 60_000, { username: 'admin', password });
async function bootScript(): Promise<{ status: number; body: string }> {
  const response = await fetch(`${API}/v1/boot/${MAC.replaceAll(':', '-')}/boot.ipxe`, {
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, body: await response.text() };
}
/** Which conductor's file server a node's boot script names (the port of its http_url). */
function servedBy(script: string): string | undefined {
  const port = new RegExp(`http://${PROVISIONING_IP.replaceAll('.', '\\.')}:(808[123])/`).exec(script)?.[1];
  return CONDUCTORS.find((name) => String(HTTP_PORT[name]) === port);
}
interface NodeShown {
  provision_state: string;
  power_state: string | null;
  last_error: string | null;
  conductor: string | null;
}
let nodeUuid = '';
const showNode = async () => (await cli(['node', 'show', nodeUuid, '-f', 'json'])) as NodeShown;
/** The conductor the API names for a node (its hash ring owner among the live conductors). */
async function conductorOf(uuid: string): Promise<string | null> {
  return ((await cli(['node', 'show', uuid, '-f', 'json', '-c', 'conductor'])) as { conductor: string | null })
    .conductor;
}
/**
 * The restart policies besides the compose file's: `docker kill` of a container under `always`
 * or `on-failure` is not restarted either, a crash of it is (a container of the dnsmasq image,
 * which has a shell, running sleep). Returns the outcome of each, as "status restarts".
 */
async function restartPolicyOutcomes(): Promise<Record<string, { killed: string; crashed: string }>> {
  const outcomes: Record<string, { killed: string; crashed: string }> = {};
  for (const policy of ['always', 'on-failure']) {
    const name = `${PROJECT}-restart-${policy}`;
    await docker(['rm', '-f', name]).catch(() => '');
    const id = (
      await docker([
        'run',
        '-d',
        '--init',
        '--name',
        name,
        '--restart',
        policy,
        '--entrypoint',
        'sleep',
        'bmaas-dnsmasq:latest',
        '600',
      ])
    ).trim();
    try {
      await docker(['kill', id]);
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const killed = (await docker(['inspect', '--format', '{{.State.Status}} {{.RestartCount}}', id])).trim();
      await docker(['start', id]);
      const pidOf = Number((await docker(['inspect', '--format', '{{.State.Pid}}', id])).trim());
      process.kill(pidOf, 'SIGKILL');
      const crashed = await waitFor(
        `the ${policy} container restarted after its process was killed`,
        async () => {
          const state = (await docker(['inspect', '--format', '{{.State.Status}} {{.RestartCount}}', id])).trim();
          return state === 'running 1' ? state : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      outcomes[policy] = { killed, crashed };
    } finally {
      await docker(['rm', '-f', id]).catch(() => '');
    }
  }
  return outcomes;
}

/** The console lines that tell a boot's way: power-ons, iPXE's downloads, the agent's and the instance's marks. */
function consoleMilestones(text: string): string {
  return (
    text
      .split(/\r?\n/)
      // iPXE's colour and cursor sequences (ESC [ ... letter) out
      .map((line) => line.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, 'g'), '').trimEnd())
      .filter((line) => /=== power on|https?:\/\/|E2E-|INSTANCE-UP|Booting the deployed/.test(line))
      .map((line) => line.slice(0, 200))
      .join('\n')
  );
}
/** The machine's console since its last power on, the end of it: what a wait that failed saw. */
async function serialTail(): Promise<string> {
  const text = (await bmc?.serialSincePowerOn()) ?? '';
  return `serial console since the last power on:\n${text.split('\n').slice(-25).join('\n')}`;
}

// The engine is started before the suite is declared: one that cannot start is a missing
// prerequisite like a missing tool (a skip, or under CI=true a failure naming why).
let prerequisite = problem();
if (prerequisite === null) {
  const missing = await missingLabTools();
  if (missing.length > 0) prerequisite = `missing ${missing.join(', ')} (see test/debian-packages.txt)`;
}
if (prerequisite === null) {
  const started = Date.now();
  try {
    engine = await ensureDockerEngine(log);
    timings.engine = (Date.now() - started) / 1000;
  } catch (error) {
    prerequisite = `no Docker engine: ${(error as Error).message}`;
  }
}

describe.skipIf(missingPrerequisite(LABEL, prerequisite))(`${LABEL}: docker-compose.yml through a real engine`, () => {
  beforeAll(async () => {
    if (!engine) throw new Error('no engine');
    let t = Date.now();
    // The stand-ins: cached in the engine (labelled with their inputs' key), seconds when current.
    // BMAAS_STANDIN_CACHE: the build script's work directory (default /var/cache/bmaas-standin).
    const standinCache = process.env.BMAAS_STANDIN_CACHE ? [process.env.BMAAS_STANDIN_CACHE] : [];
    const standins = await sh([join(REPO, 'docker/test-standins/build.sh'), ...standinCache], 900_000, engine.env);
    timings.standins = (Date.now() - t) / 1000;
    const baseImages = Object.fromEntries(
      standins
        .split('\n')
        .filter((line) => /^\w+=\S+$/.test(line))
        .map((line) => line.split('=', 2) as [string, string]),
    );
    log(`stand-in base images (${timings.standins} s): ${JSON.stringify(baseImages)}`);

    workDir = mkdtempSync(join(tmpdir(), 'bmaas-compose-'));
    await run('ip', ['link', 'del', BRIDGE]).catch(() => {});
    await run('ip', ['netns', 'del', CLIENT_NAMESPACE]).catch(() => {});
    await run('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
    bridgeMade = true;
    await run('ip', ['addr', 'add', `${PROVISIONING_IP}/24`, 'dev', BRIDGE]);
    await run('ip', ['-6', 'addr', 'add', 'fd79::1/64', 'dev', BRIDGE, 'nodad']);
    await run('ip', ['link', 'set', BRIDGE, 'up']);

    composeEnv = {
      ...engine.env,
      ...baseImages,
      DOCKER_BUILDKIT: '0',
      COMPOSE_DOCKER_CLI_BUILD: '0',
      PROVISIONING_IP,
      PROVISIONING_INTERFACE: BRIDGE,
      PROVISIONING_DHCP_RANGE: '192.168.79.100,192.168.79.150,1h',
      PROVISIONING_IPV6_PREFIX: 'fd79::',
      POSTGRES_PASSWORD: 'compose-test',
    };
    // The stack is built while the test ramdisk and the instance image are (both cached).
    t = Date.now();
    const [[ramdisk, image]] = await Promise.all([
      // One after the other, as test/e2e builds them (they share the kernel package).
      buildTestRamdisk(IMAGE_CACHE_DIR).then(
        async (built) => [built, await buildInstanceImage(IMAGE_CACHE_DIR)] as const,
      ),
      composeRun(['up', '-d', '--build'], 1_200_000).then(() => {
        timings.upBuild = (Date.now() - t) / 1000;
      }),
    ]);
    timings.ramdiskAndImage = (Date.now() - t) / 1000;
    instanceImage = image;
    timings.healthy = await waitForHealthy('the stack to report healthy after up --build', 180_000);
    log(`up --build ${timings.upBuild} s, then healthy in ${timings.healthy} s`);

    // The ramdisk's kernel and initrd and the instance image, served on the provisioning address
    // as an operator's image server would: the conductors (in their containers) fetch the
    // ramdisk, the agent (on the machine) the image.
    const socket = join(workDir, 'images.sock');
    images = await startImageServer(socket, image.path, {
      '/deploy_kernel': ramdisk.kernel,
      '/deploy_ramdisk': ramdisk.initrd,
    });
    const port = await freePort();
    imagesRelay = await startHostRelay(`tcp:${PROVISIONING_IP}:${port}`, `unix:${socket}`);
    imagesUrl = `http://${PROVISIONING_IP}:${port}`;

    // The machine: its NIC a tap on the provisioning bridge, its BMC (ipmi_sim) on the
    // provisioning address, port 623, where every conductor's container reaches it.
    await run('ip', ['link', 'del', TAP]).catch(() => {});
    removeTap = await addHostTap(BRIDGE, TAP);
    const disk = join(workDir, `${MACHINE}.disk`);
    writeFileSync(disk, '');
    truncateSync(disk, DISK_BYTES);
    bmc = await startMachineBmc({
      name: MACHINE,
      mac: MAC,
      net: { kind: 'tap', tap: TAP },
      address: PROVISIONING_IP,
      port: 623,
      workDir,
      disk,
    });
  }, 1_800_000);

  let failed = false;
  afterEach((context) => {
    if (context.task.result?.state === 'fail') failed = true;
  });

  afterAll(async () => {
    if (failed && bmc) log(await serialTail());
    await bmc?.stop().catch(log);
    await removeTap?.();
    if (composeEnv.PROVISIONING_IP) await composeRun(['down', '-v', '--remove-orphans'], 180_000).catch(log);
    await imagesRelay?.stop();
    await images?.close();
    if (clientNamespaceMade) await run('ip', ['netns', 'del', CLIENT_NAMESPACE]).catch(() => {});
    if (bridgeMade) await run('ip', ['link', 'del', BRIDGE]).catch(() => {});
    if (workDir && (failed || process.env.BMAAS_E2E_KEEP)) log(`work directory kept: ${workDir} (serial console, BMC)`);
    else if (workDir) rmSync(workDir, { recursive: true, force: true });
    await engine?.stop();
    log(`timings (s): ${JSON.stringify(timings)}`);
  }, 240_000);

  it('up --build: migrations applied, credentials made, the API, three conductors and dnsmasq up', async () => {
    expect((await stateOf('dbsync')).ExitCode).toBe(0);
    expect((await stateOf('credentials')).ExitCode).toBe(0);
    for (const name of ['api', ...CONDUCTORS]) expect((await stateOf(name)).Health?.Status, name).toBe('healthy');
    // dnsmasq serves DHCP on the provisioning bridge: its log says so.
    expect(await logsOf('dnsmasq')).toMatch(/DHCP, IP range 192\.168\.79\.100 -- 192\.168\.79\.150/);
  });

  it("dnsmasq's container answers an iPXE client on the provisioning bridge: an address of the range, conductor-1's boot.ipxe", async () => {
    // A client NIC (a veth from a namespace of this test into the bridge) asks by DHCP as iPXE does (option 175).
    const leaseFile = join(workDir, 'lease.env');
    writeFileSync(join(workDir, 'lease.sh'), '#!/bin/sh\n[ "$1" = bound ] && env > "$LEASE_FILE"\nexit 0\n', {
      mode: 0o755,
    });
    await run('ip', ['netns', 'add', CLIENT_NAMESPACE]);
    clientNamespaceMade = true;
    await run('ip', ['link', 'add', 'bmcompose-c0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', CLIENT_NAMESPACE]);
    await run('ip', ['link', 'set', 'bmcompose-c0', 'master', BRIDGE, 'up']);
    await run('ip', ['-n', CLIENT_NAMESPACE, 'link', 'set', 'eth0', 'address', '52:54:00:c0:39:99', 'up']);
    await run(
      'ip',
      [
        ...['netns', 'exec', CLIENT_NAMESPACE, 'env', `LEASE_FILE=${leaseFile}`],
        ...[
          'busybox',
          'udhcpc',
          '-i',
          'eth0',
          '-f',
          '-q',
          '-n',
          '-t',
          '10',
          '-T',
          '1',
          '-s',
          join(workDir, 'lease.sh'),
        ],
        ...['-x', '0xaf:b10101'],
      ],
      { timeout: 60_000 },
    );
    const lease = Object.fromEntries(
      readFileSync(leaseFile, 'utf8')
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    const last = Number(String(lease.ip).split('.')[3]);
    expect(String(lease.ip).startsWith('192.168.79.') && last >= 100 && last <= 150, lease.ip).toBe(true);
    expect(lease.boot_file).toBe(`http://${PROVISIONING_IP}:8081/boot.ipxe`);
    // What that URL serves, from the client's side (the lease's address on its NIC): conductor-1's
    // root script, chaining /v1/boot on the API.
    await run('ip', ['-n', CLIENT_NAMESPACE, 'addr', 'add', `${lease.ip}/24`, 'dev', 'eth0']);
    const root = await run('ip', [
      'netns',
      'exec',
      CLIENT_NAMESPACE,
      'busybox',
      'wget',
      '-q',
      '-O',
      '-',
      lease.boot_file as string,
    ]);
    expect(root.stdout).toMatch(/^#!ipxe/);
    expect(root.stdout).toContain(`${API}/v1/boot/`);
  }, 120_000);

  it('the baremetal CLI, with the password the stack generated, sees three conductors and the ipmi driver', async () => {
    password = (
      await docker(['exec', await containerOf('api'), 'cat', '/var/lib/bmaas/credentials/api-password'])
    ).trim();
    expect(password.length).toBeGreaterThanOrEqual(16);
    // Without the password: refused.
    const anonymous = await fetch(`${API}/v1/nodes`);
    expect(anonymous.status).toBe(401);
    const conductors = (await cli(['conductor', 'list', '-f', 'json'])) as Array<{ Hostname: string; Alive: boolean }>;
    expect(conductors.map((c) => c.Hostname).sort()).toEqual(CONDUCTORS);
    expect(conductors.every((c) => c.Alive)).toBe(true);
    const drivers = (await cli(['driver', 'list', '-f', 'json'])) as Array<{ 'Supported driver(s)': string }>;
    expect(drivers.map((d) => d['Supported driver(s)']).sort()).toEqual(['fake-hardware', 'ipmi']);
  }, 120_000);

  it('the image as operators judge it: a non-root user, health checks, JSON log lines; its size', async () => {
    const image = await docker(['image', 'inspect', '--format', '{{.Config.User}} {{.Size}}', 'bmaas:latest']);
    const [user, size] = image.trim().split(' ');
    expect(user).toBe('10001:10001');
    timings.imageMB = Math.round(Number(size) / 1e6);
    const base = await docker(['image', 'inspect', '--format', '{{.Size}}', String(composeEnv.BMAAS_DEBIAN_IMAGE)]);
    timings.baseMB = Math.round(Number(base.trim()) / 1e6);
    log(
      `bmaas:latest ${timings.imageMB} MB, of which ${timings.baseMB} MB the stand-in ${composeEnv.BMAAS_DEBIAN_IMAGE}`,
    );
    // What each layer of its own adds (the guide states these).
    const layers = await docker(['history', '--no-trunc', '--format', '{{.Size}}\t{{.CreatedBy}}', 'bmaas:latest']);
    for (const line of layers.split('\n').filter((l) => l && !l.startsWith('0B'))) log(`  layer ${line.slice(0, 160)}`);
    for (const name of ['api', ...CONDUCTORS]) {
      const id = await containerOf(name);
      expect((await docker(['exec', id, 'id', '-u'])).trim(), name).toBe('10001');
      const health = await docker(['inspect', '--format', '{{json .Config.Healthcheck.Test}}', id]);
      expect(JSON.parse(health)[0], name).toBe('CMD');
      // docker logs: the service's own output only, one JSON object a line (bmaas logs to standard
      // error, keeping standard output for commands' output; docker logs shows both streams).
      const { stdout, stderr } = await run('docker', ['logs', id], { env: composeEnv, maxBuffer: 64 * 1024 * 1024 });
      expect(stdout, `${name} writes nothing else to stdout`).toBe('');
      const lines = stderr.split('\n').filter(Boolean);
      expect(lines.length, name).toBeGreaterThan(0);
      for (const line of lines) expect(() => JSON.parse(line), `${name}: ${line}`).not.toThrow();
    }
  });

  it(
    'the CLI enrols the QEMU machine behind its ipmi_sim BMC; it network-boots through /v1/boot, is deployed to disk by its conductor and boots from disk',
    async () => {
      const machine = bmc as MachineBmc;
      const info = machine.driverInfo({
        deploy_kernel: `${imagesUrl}/deploy_kernel`,
        deploy_ramdisk: `${imagesUrl}/deploy_ramdisk`,
        kernel_append_params: RAMDISK_KERNEL_ARGS,
      });
      // Taken over while conductor-1 is down, the machine could not boot from the network: the
      // root boot.ipxe dnsmasq names is conductor-1's (see docs/operator-guide.md). So the node is
      // one conductor-1 does not own (its UUID decides; created again with another until so).
      let owner: string | undefined;
      for (let attempt = 1; attempt <= 10 && !owner; attempt++) {
        const node = (await cli([
          ...['node', 'create', '--driver', 'ipmi', '--name', 'compose-machine-1'],
          ...['--boot-interface', 'ipxe', '--deploy-interface', 'direct', '--no-automated-clean'],
          ...Object.entries(info).flatMap(([key, value]) => ['--driver-info', `${key}=${value}`]),
          ...['-f', 'json'],
        ])) as { uuid: string };
        const by = await conductorOf(node.uuid);
        if (by !== null && by !== 'conductor-1') {
          nodeUuid = node.uuid;
          owner = by;
        } else {
          await cli(['node', 'delete', node.uuid]);
        }
      }
      expect(CONDUCTORS, 'a node conductor-1 does not own').toContain(owner);
      await cli(['port', 'create', MAC, '--node', nodeUuid, '-f', 'json']);
      // manage: the owner's container reads the power state through the BMC.
      await cli(['node', 'manage', '--wait', '120', nodeUuid]);
      expect((await showNode()).power_state, 'read through ipmi_sim from the container').toBe('power off');
      await cli(['node', 'provide', '--wait', '120', nodeUuid]);
      await cli([
        ...['node', 'set', nodeUuid],
        ...['--instance-info', `image_source=${imagesUrl}${images?.imagePath}`],
        ...['--instance-info', 'image_os_hash_algo=sha256'],
        ...['--instance-info', `image_os_hash_value=${instanceImage?.sha256}`],
        ...['--instance-info', 'image_disk_format=raw'],
      ]);
      const started = Date.now();
      await cli(['node', 'deploy', nodeUuid]);
      const deployed = await waitFor(
        'the machine to be deployed ("active")',
        async () => {
          const node = await showNode();
          if (/fail/.test(node.provision_state)) throw new Error(`${node.provision_state}: ${node.last_error}`);
          return node.provision_state === 'active' ? node : undefined;
        },
        { timeoutMs: DEPLOY_TIMEOUT_MS, intervalMs: 3000, describe: serialTail },
      );
      timings.deploy = (Date.now() - started) / 1000;
      expect(deployed).toMatchObject({ power_state: 'power on', last_error: null, conductor: owner });
      log(`deployed by ${owner} in ${timings.deploy} s`);
      const serial = readFileSync(machine.serialLog, 'utf8');
      // Network boot (bootdev pxe over IPMI): iPXE got the root script from dnsmasq's answer,
      // chained the API's /v1/boot/<MAC>/boot.ipxe, and the ramdisk's agent looked itself up.
      expect(serial).toMatch(
        new RegExp(
          `=== power on, bootdev=pxe[\\s\\S]*/v1/boot/${MAC.replaceAll(':', '-')}/boot\\.ipxe[\\s\\S]*E2E-LOOKUP ok node=${nodeUuid}`,
        ),
      );
      // Then, the image written, the disk (bootdev disk over IPMI).
      await machine.waitForSerialSincePowerOn(/bootdev=default[\s\S]*INSTANCE-UP from disk/, 180_000);
      log(
        `the machine's console, the lines that tell its way:\n${consoleMilestones(readFileSync(machine.serialLog, 'utf8'))}`,
      );
      timings.deployedAndUp = (Date.now() - started) / 1000;
      const chassis = readFileSync(join(workDir, `${MACHINE}-bmc`, 'chassis.log'), 'utf8');
      expect(chassis).toMatch(/set boot pxe[\s\S]*set power 1[\s\S]*set boot default[\s\S]*set power 1/);
      // The image came from the image server on the provisioning address, fetched by the agent.
      expect(images?.requests.some((r) => r.url === images?.imagePath && r.status === 200)).toBe(true);
    },
    DEPLOY_TIMEOUT_MS + 420_000,
  );

  it("docker kill of the owner's container: another conductor takes the machine over and, on a rebuild, serves its boot and deploys it; docker kill is an operator's stop, a crash is restarted", async () => {
    const machine = bmc as MachineBmc;
    const owner = (await conductorOf(nodeUuid)) as string;
    const killedAt = Date.now();
    await docker(['kill', await containerOf(owner)]);
    // Meanwhile (the takeover waits a minute for a heartbeat to time out), the other policies.
    const policies = restartPolicyOutcomes().then((outcomes) => {
      for (const [policy, { killed, crashed }] of Object.entries(outcomes)) {
        log(`restart: ${policy}: after docker kill "${killed}" (status, restarts); after a crash "${crashed}"`);
        expect(killed, `restart: ${policy}, docker kill`).toBe('exited 0');
        expect(crashed, `restart: ${policy}, a crash`).toBe('running 1');
      }
    });
    policies.catch(() => {}); // awaited at the end
    const newOwner = await waitFor(
      `another conductor than ${owner} to own the machine's node`,
      async () => {
        const by = await conductorOf(nodeUuid).catch(() => null);
        return by && by !== owner ? by : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 1000 },
    );
    timings.takeover = (Date.now() - killedAt) / 1000;
    log(`conductor ${owner} killed: the API names ${newOwner} as the node's conductor after ${timings.takeover} s`);
    // The engine counts `docker kill` as a stop the operator asked for, whatever the restart policy.
    log(`${[...compose, '-p', PROJECT].join(' ')} ps, ${owner} killed:\n${await composeRun(['ps'])}`);
    const afterKill = await stateOf(owner);
    log(`${owner} ${timings.takeover} s after docker kill: ${afterKill.Status}, restarts ${afterKill.RestartCount}`);
    expect(afterKill).toMatchObject({ Status: 'exited', ExitCode: 137, RestartCount: 0 });

    // An active node's boot configuration is not served ([api]restrict_boot_config: only "* wait"
    // states): the machine boots its disk. A rebuild, taken by the new owner, network-boots it
    // again: its boot script, served through the API, is the new owner's (its file server).
    await waitFor(
      `the rebuild to be accepted by ${newOwner}`,
      async () =>
        cli(['node', 'rebuild', nodeUuid]).then(
          () => true,
          (error: Error) => {
            // Refused while the new owner still holds the node for its takeover: asked again.
            log(`rebuild not yet: ${error.message.split('\n')[0]}`);
            return undefined;
          },
        ),
      { timeoutMs: 90_000, intervalMs: 3000 },
    );
    const script = await waitFor(
      `the machine's boot script served by ${newOwner}`,
      async () => {
        const answer = await bootScript().catch(() => undefined);
        return answer?.status === 200 && servedBy(answer.body) === newOwner ? answer.body : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    timings.servedByNewOwner = (Date.now() - killedAt) / 1000;
    log(`${newOwner} served the machine's deploy boot script ${timings.servedByNewOwner} s after the kill`);
    expect(script).toContain(`# Boot script of node ${nodeUuid},`);
    const rebuilt = await waitFor(
      'the machine to be deployed again ("active")',
      async () => {
        const node = await showNode();
        if (/fail/.test(node.provision_state)) throw new Error(`${node.provision_state}: ${node.last_error}`);
        return node.provision_state === 'active' ? node : undefined;
      },
      { timeoutMs: DEPLOY_TIMEOUT_MS, intervalMs: 3000, describe: serialTail },
    );
    expect(rebuilt).toMatchObject({ last_error: null, conductor: newOwner });
    await machine.waitForSerialSincePowerOn(/bootdev=default[\s\S]*INSTANCE-UP from disk/, 180_000);
    timings.rebuiltAndUp = (Date.now() - killedAt) / 1000;
    // The network boot of the rebuild: the kernel from the new owner's file server.
    const serial = readFileSync(machine.serialLog, 'utf8');
    const lastNetworkBoot = serial.slice(serial.lastIndexOf('=== power on, bootdev=pxe'));
    expect(lastNetworkBoot).toContain(`${PROVISIONING_IP}:${HTTP_PORT[newOwner]}/${nodeUuid}/deploy_kernel`);
    log(`the rebuild through ${newOwner}:\n${consoleMilestones(lastNetworkBoot)}`);
    const history = (await cli(['node', 'history', 'list', '--long', nodeUuid, '-f', 'json'])) as Array<
      Record<string, string>
    >;
    const served = history
      .filter((entry) => entry['Event Origin Type'] === 'boot-config')
      .map((entry) => entry.Conductor);
    log(`boot configurations served, by conductor: ${served.join(', ')}`);
    expect(served).toContain(owner);
    expect(served).toContain(newOwner);
    let t = Date.now();

    // `up -d` starts what is not running; the machine goes back to its first owner.
    await composeRun(['up', '-d'], 300_000);
    await waitForHealthy(`${owner} to be healthy again after up -d`, 180_000);
    timings.upAfterKill = (Date.now() - t) / 1000;

    // A conductor that dies on its own (here its container's process killed from the host, as
    // the kernel's OOM killer would): restart: unless-stopped starts it again.
    const before = await stateOf(owner);
    const pid = Number((await docker(['inspect', '--format', '{{.State.Pid}}', await containerOf(owner)])).trim());
    t = Date.now();
    process.kill(pid, 'SIGKILL');
    await waitFor(
      `${owner} restarted by the engine`,
      async () => ((await stateOf(owner)).RestartCount > before.RestartCount ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    timings.crashRestarted = (Date.now() - t) / 1000;
    await waitForHealthy(`${owner} to be healthy after its restart`, 180_000);
    timings.crashHealthy = (Date.now() - t) / 1000;
    log(
      `${owner} killed from the host: restarted by the engine after ${timings.crashRestarted} s, healthy after ${timings.crashHealthy} s`,
    );

    await policies;
  }, 900_000);

  it('down then up: the node, its port, its history and the credentials are still there', async () => {
    const before = (await cli(['node', 'history', 'list', nodeUuid, '-f', 'json'])) as unknown[];
    await composeRun(['down'], 180_000);
    expect(await containers()).toEqual([]);
    await composeRun(['up', '-d'], 300_000);
    timings.upAgainHealthy = await waitForHealthy('the stack to be healthy after down and up', 180_000);
    const again = (
      await docker(['exec', await containerOf('api'), 'cat', '/var/lib/bmaas/credentials/api-password'])
    ).trim();
    expect(again).toBe(password);
    const node = (await cli(['node', 'show', nodeUuid, '-f', 'json'])) as { name: string };
    expect(node.name).toBe('compose-machine-1');
    const ports = (await cli(['port', 'list', '--node', nodeUuid, '-f', 'json'])) as Array<{ Address: string }>;
    expect(ports.map((p) => p.Address)).toEqual([MAC]);
    const history = (await cli(['node', 'history', 'list', nodeUuid, '-f', 'json'])) as unknown[];
    expect(history.length).toBeGreaterThanOrEqual(before.length);
  }, 420_000);

  it('down -v: no container, volume, network or mount of the stack is left', async () => {
    await composeRun(['down', '-v'], 180_000);
    expect(await containers()).toEqual([]);
    const label = `label=com.docker.compose.project=${PROJECT}`;
    expect((await docker(['volume', 'ls', '-q', '--filter', label])).trim()).toBe('');
    expect((await docker(['network', 'ls', '-q', '--filter', label])).trim()).toBe('');
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .filter((line) => line.includes(`/volumes/${PROJECT}_`));
    expect(mounts).toEqual([]);
  }, 240_000);
});

async function logsOf(service: string): Promise<string> {
  try {
    const { stdout, stderr } = await run('docker', ['logs', await containerOf(service)], { env: composeEnv });
    return stdout + stderr;
  } catch {
    return '';
  }
}
