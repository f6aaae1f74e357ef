// The lab process: owns every machine, BMC, relay and dnsmasq of `npm run lab`, answers on a
// control socket, and tears everything down when told to (SIGTERM) or when the stack it serves
// is gone (it watches the stack's PID file).
import { existsSync, rmSync } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import {
  acquireLock,
  lockHolder,
  MACHINE_FACING_HOST,
  MACHINE_KERNEL_APPEND_PARAMS,
  type StackEndpoints,
} from '@bmaas/stack';
import { type MachineBmc, startMachineBmc } from './bmc.js';
import { run } from './child-process.js';
import { type Dnsmasq, startDnsmasq } from './dnsmasq.js';
import { type HostRelay, startHostRelay } from './host-relay.js';
import { startImageServer } from './image-server.js';
import type { LabBmcKind, LabDescription, LabMachine } from './lab-machines.js';
import type { LabPaths } from './lab-paths.js';
import { LabNetwork } from './netns.js';
import type { GuestForward, MachineNetwork } from './qemu.js';
import { RAMDISK_AGENT_PORT } from './ramdisk.js';
import { type RedfishMachineBmc, startRedfishMachineBmc } from './redfish-machine-bmc.js';

/** The host end of the veth into the lab namespace (conductors reach the machines' agents through it). */
export const LAB_HOST_ADDRESS = '192.168.77.254';
/** Each machine's virtio disk, which a deploy writes the instance image to. */
const DISK_BYTES = 128 * 1024 * 1024;
const STACK_WATCH_INTERVAL_MS = 1000;

export interface LabProcessOptions {
  paths: LabPaths;
  endpoints: StackEndpoints;
  network: 'netns' | 'user';
  /** The instance image served to the machines, and its sha256. */
  imageFile: string;
  imageSha256: string;
  /** The machines' BMCs: ipmi_sim (default) or Redfish services. */
  bmc?: LabBmcKind;
}

/** A machine's BMC as the lab process keeps it, whatever it speaks. */
interface LabBmc {
  readonly name: string;
  readonly mac: string;
  readonly address: string;
  readonly port: number;
  readonly serialLog: string;
  readonly pid: number;
  driverInfo(overrides: Record<string, unknown>): Record<string, unknown>;
  poweredOn(): Promise<boolean>;
  stop(): Promise<void>;
}

function ipmiLabBmc(bmc: MachineBmc): LabBmc {
  return {
    name: bmc.name,
    mac: bmc.mac,
    address: bmc.address,
    port: bmc.port,
    serialLog: bmc.serialLog,
    pid: bmc.pid,
    driverInfo: (overrides) => bmc.driverInfo(overrides),
    poweredOn: async () => bmc.machineRunning(),
    stop: () => bmc.stop(),
  };
}

function redfishLabBmc(bmc: RedfishMachineBmc): LabBmc {
  return {
    name: bmc.name,
    mac: bmc.mac,
    address: bmc.address,
    port: bmc.port,
    serialLog: bmc.serialLog,
    pid: process.pid,
    driverInfo: (overrides) => bmc.driverInfo(overrides),
    poweredOn: () => bmc.poweredOn().catch(() => false),
    stop: () => bmc.stop(),
  };
}

function log(message: string): void {
  process.stdout.write(`${new Date().toISOString()} ${message}\n`);
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Runs until SIGTERM/SIGINT or until the stack stops; resolves after the teardown. */
export async function runLabProcess(options: LabProcessOptions): Promise<void> {
  const { paths, endpoints } = options;
  const lock = acquireLock(paths.pidFile);
  if ('heldBy' in lock) throw new Error(`a lab process already runs (pid ${lock.heldBy})`);
  const undo: Array<() => Promise<unknown>> = [];
  const bmcKind = options.bmc ?? 'ipmi';
  const bmcs: LabBmc[] = [];
  let network: LabNetwork | undefined;
  let dnsmasq: Dnsmasq | undefined;
  let stopping: Promise<void> | undefined;
  let control: http.Server | undefined;

  const teardown = (why: string): Promise<void> => {
    stopping ??= (async () => {
      log(`${why}: stopping machines, BMCs, dnsmasq and the network`);
      control?.close();
      await Promise.all(bmcs.map((bmc) => bmc.stop().catch(() => {})));
      for (const step of undo.splice(0).reverse()) await step().catch((e: Error) => log(`teardown: ${e.message}`));
      // the machines' disks go with them: a new lab starts from blank disks
      for (const bmc of bmcs) rmSync(join(paths.dir, `${bmc.name}.disk`), { force: true });
      rmSync(paths.controlSocket, { force: true });
      lock.release();
      log('stopped');
    })();
    return stopping;
  };
  const stopped = new Promise<void>((resolveStopped) => {
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.on(signal, () => void teardown(signal).then(resolveStopped));
    }
    const watch = setInterval(() => {
      if (lockHolder(join(paths.stateDir, 'stack.pid')) === endpoints.pid) return;
      clearInterval(watch);
      void teardown(`the stack (pid ${endpoints.pid}) stopped`).then(resolveStopped);
    }, STACK_WATCH_INTERVAL_MS);
    undo.push(async () => clearInterval(watch));
  });

  try {
    // The instance image, on a loopback port relayed to the machines like the stack's ports.
    const imageSocket = join(paths.dir, 'images.sock');
    rmSync(imageSocket, { force: true });
    const images = await startImageServer(imageSocket, options.imageFile);
    undo.push(() => images.close());
    const imagePort = await freePort();
    const imageRelay = await startHostRelay(`tcp:127.0.0.1:${imagePort}`, `unix:${imageSocket}`);
    undo.push(() => imageRelay.stop());
    const ports = [portOf(endpoints.apiUrl), ...endpoints.conductors.map((c) => portOf(c.httpUrl)), imagePort];
    const bootUrl = `${endpoints.conductors[0]?.machineHttpUrl}/boot.ipxe`;

    /** Each machine's network, and its node's driver_info.kernel_append_params ('' = the stack's). */
    let machineNet: () => Promise<{ net: MachineNetwork; kernelParams: string }>;
    if (options.network === 'netns') {
      await removeOrphanNamespaces();
      const lab = await LabNetwork.create('bmaas-lab');
      network = lab;
      undo.push(() => lab.destroy());
      await lab.linkToHost(`bmlab${process.pid}`, LAB_HOST_ADDRESS);
      await lab.addLocalAddress(MACHINE_FACING_HOST);
      for (const port of ports) {
        const socket = join(paths.dir, `port-${port}.sock`);
        rmSync(socket, { force: true });
        const relay: HostRelay = await startHostRelay(`unix:${socket}`, `tcp:127.0.0.1:${port}`);
        undo.push(() => relay.stop());
        await lab.portToHostSocket(MACHINE_FACING_HOST, port, socket);
      }
      const started = await startDnsmasq({ network: lab, bootUrl, workDir: paths.dir });
      dnsmasq = started;
      // stopped with the namespace's other processes
      machineNet = async () => ({ net: { kind: 'tap', network: lab, tap: await lab.addTap() }, kernelParams: '' });
    } else {
      const forwards: GuestForward[] = ports.map((port) => ({ guestPort: port, hostPort: port }));
      // The conductors reach each agent through a host port forward, which the agent advertises.
      machineNet = async () => {
        const agentPort = await freePort();
        return {
          net: {
            kind: 'user',
            bootUrl,
            forwards,
            hostForwards: [{ hostPort: agentPort, guestPort: RAMDISK_AGENT_PORT }],
          },
          kernelParams: `${MACHINE_KERNEL_APPEND_PARAMS} ipa-advertise-host=127.0.0.1 ipa-advertise-port=${agentPort}`,
        };
      };
    }

    const describe = async (): Promise<LabDescription> => ({
      pid: process.pid,
      network: options.network,
      namespace: network?.name ?? null,
      dnsmasqPid: dnsmasq?.pid ?? null,
      bmc: bmcKind,
      instanceInfo: {
        image_source: `http://${MACHINE_FACING_HOST}:${imagePort}${images.imagePath}`,
        image_os_hash_algo: 'sha256',
        image_os_hash_value: options.imageSha256,
        image_disk_format: 'raw',
      },
      machines: await Promise.all(
        bmcs.map(
          async (bmc): Promise<LabMachine> => ({
            name: bmc.name,
            mac: bmc.mac,
            bmc: bmcKind,
            bmcAddress: bmc.address,
            bmcPort: bmc.port,
            driverInfo: bmc.driverInfo({ kernel_append_params: kernelParams.get(bmc.name) ?? '' }),
            serialLog: bmc.serialLog,
            poweredOn: await bmc.poweredOn(),
            bmcPid: bmc.pid,
          }),
        ),
      ),
    });

    const kernelParams = new Map<string, string>();
    let adding: Promise<unknown> = Promise.resolve();
    const ensureMachines = (count: number): Promise<unknown> => {
      adding = adding.then(async () => {
        while (bmcs.length < count) {
          const index = bmcs.length + 1;
          const name = `lab-${index}`;
          const disk = join(paths.dir, `${name}.disk`);
          await writeFile(disk, '');
          await truncate(disk, DISK_BYTES);
          // a new machine, a new console log
          rmSync(join(paths.dir, `${name}.serial.log`), { force: true });
          const { net, kernelParams: params } = await machineNet();
          kernelParams.set(name, params);
          const mac = `52:54:00:1a:b0:${index.toString(16).padStart(2, '0')}`;
          const bmc =
            bmcKind === 'redfish'
              ? redfishLabBmc(
                  await startRedfishMachineBmc({
                    name,
                    mac,
                    net,
                    workDir: paths.dir,
                    disk,
                    pkiDirectory: paths.pkiDir,
                  }),
                )
              : ipmiLabBmc(
                  await startMachineBmc({
                    name,
                    mac,
                    net,
                    address: '127.0.0.1',
                    port: await freePort(),
                    workDir: paths.dir,
                    disk,
                    bmcOnHost: true,
                  }),
                );
          bmcs.push(bmc);
          const what = bmcKind === 'redfish' ? 'Redfish' : `ipmi_sim pid ${bmc.pid}`;
          log(`${name}: BMC ${bmc.address}:${bmc.port} (${what}), serial log ${bmc.serialLog}`);
        }
      });
      return adding;
    };

    rmSync(paths.controlSocket, { force: true });
    control = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://lab');
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET' && url.pathname === '/lab') {
        describe().then(
          (lab) => answer(200, lab),
          (error: Error) => answer(500, { error: error.message }),
        );
        return;
      }
      if (req.method === 'POST' && url.pathname === '/machines') {
        const count = Number(url.searchParams.get('count'));
        if (!Number.isInteger(count) || count < 1 || count > 20) return answer(400, { error: 'count: 1 to 20' });
        ensureMachines(count)
          .then(describe)
          .then(
            (lab) => answer(200, lab),
            (error: Error) => answer(500, { error: error.message }),
          );
        return;
      }
      answer(404, { error: 'not found' });
    });
    const server = control;
    await new Promise<void>((resolveListen) => server.listen(paths.controlSocket, resolveListen));
    log(`lab ready (${options.network} networking${network ? `, namespace ${network.name}` : ''})`);
  } catch (error) {
    await teardown(`start failed: ${(error as Error).message}`);
    throw error;
  }
  await stopped;
}

/** Namespaces of lab processes that no longer run (killed outright): deleted, with their veth. */
async function removeOrphanNamespaces(): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']);
  for (const line of stdout.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const pid = /^bmaas-lab-(\d+)-\d+$/.exec(name)?.[1];
    if (pid === undefined || existsSync(`/proc/${pid}`)) continue;
    log(`deleting ${name}, left by a lab process that was killed`);
    await run('ip', ['netns', 'del', name]).catch(() => {});
  }
}
