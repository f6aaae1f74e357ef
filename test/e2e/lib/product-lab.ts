// The product in a lab: API + conductors wired to machines either on a namespace bridge with
// dnsmasq (one static DHCP config, as in production) or on QEMU user-mode networking.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiClient, type NodeAnswer } from '@bmaas/api-client';
import { freePort } from '@bmaas/common';
import {
  type Dnsmasq,
  GUESTFWD_ADDRESS,
  type HostRelay,
  LabNetwork,
  type MachineBmc,
  type QemuMachine,
  type QemuMachineOptions,
  RAMDISK_AGENT_PORT,
  RAMDISK_KERNEL_ARGS,
  type RedfishMachineBmc,
  startDnsmasq,
  startHostRelay,
  startMachineBmc,
  startQemuMachine,
  startRedfishMachineBmc,
  type TestRamdisk,
} from '@bmaas/lab';
import { buildGrubHttpImage, GRUB_EFI_FILE } from './grub-image.js';
import { type ProductStack, type StackLayout, spawnOnHost, startProductStack } from './lab-services.js';

/** Printed by the fallback script the root boot.ipxe chains when no NIC has a boot configuration. */
export const FALLBACK_MARKER = 'E2E-FALLBACK';
const FALLBACK_FILE = 'e2e-fallback.ipxe';
/** BMCs of the namespace variant listen on 192.168.77.200, .201, … (port 623). */
const BMC_ADDRESS_PREFIX = '192.168.77.';
const BMC_ADDRESS_BASE = 200;
/** Returning from the fallback ends iPXE; the BIOS has nothing else to boot and reboots, as a real machine would. */
const FALLBACK_SCRIPT = `#!ipxe\necho ${FALLBACK_MARKER} no boot configuration for \${net0/mac}\nexit 0\n`;

export interface ProductLab {
  readonly stack: ProductStack;
  readonly api: ApiClient;
  readonly workDir: string;
  /** dnsmasq, in the namespace variant (unless started without DHCP). */
  readonly dnsmasq: Dnsmasq | undefined;
  /**
   * A machine with one NIC (and `disk` as its virtio disk, else diskless; `hardware`: what inspection reads), powered off until the
   * product powers it on through `qmpSocket`; `firmware: 'uefi'` boots it with OVMF.
   */
  addMachine(
    name: string,
    mac: string,
    options?: Pick<QemuMachineOptions, 'disk' | 'qmpSocket' | 'firmware' | 'hardware'>,
  ): Promise<QemuMachine>;
  /**
   * A machine behind its own IPMI BMC (ipmi_sim, bmc.ts) instead of QMP: powered off until
   * something powers it on through IPMI. `disk`: a raw image it boots with bootdev disk.
   */
  addBmcMachine(name: string, mac: string, options?: { disk?: string }): Promise<MachineBmc>;
  /**
   * A machine behind its own Redfish BMC (@bmaas/redfish-bmc, QEMU powered through QMP),
   * powered off until something powers it on through Redfish. The service runs in the test
   * process; `driverInfo` reaches it from the product (namespace variant: relayed onto the
   * bridge address). Namespace variant only.
   */
  addRedfishMachine(
    name: string,
    mac: string,
    options?: { disk?: string; firmware?: 'bios' | 'uefi' },
  ): Promise<{ bmc: RedfishMachineBmc; driverInfo: Record<string, unknown> }>;
  /**
   * Makes an HTTP service of the test (listening on the Unix socket
   * `socketPath`) reachable from the machines; returns its base URL as they
   * see it. Namespace variant only.
   */
  reachFromMachines(socketPath: string): Promise<string>;
  /** Stops machines, DHCP, the product and the network, each by PID. */
  stop(): Promise<void>;
}

export interface ProductLabOptions {
  databaseUrl: string;
  /** Short (QMP socket paths are limited to 107 bytes). */
  workDir: string;
  conductors: number;
  /** More BMAAS_* for every process (a function gets the stack's layout: its ports and URLs). */
  env?: Record<string, string> | ((layout: StackLayout) => Record<string, string>);
  /** Where the test ramdisk lives: the conductors' [conductor]file_url_allowed_paths. */
  imagesDir: string;
  /**
   * UEFI machines too (netns variant): a GRUB EFI image in the first conductor's http_root,
   * which dnsmasq hands to UEFI HTTP Boot clients.
   */
  uefiGrub?: boolean;
  /**
   * Namespace variant: `false` = no DHCP server on the bridge at all (machines configure their
   * network from what they are given, e.g. network_data on a virtual media ISO). Default true.
   */
  dhcp?: boolean;
  /**
   * Namespace variant, one conductor: its http_root reachable from the test host, where the lab's
   * Redfish BMCs run and fetch virtual media, at http://127.0.0.1:<port>, given to the conductor
   * as [deploy]external_http_url (a BMC network apart from the provisioning network).
   */
  bmcReachesHttpRoot?: boolean;
  /**
   * User-mode variant: the host port forwarded to the machine's agent (port
   * 9999); the agent is told to advertise 127.0.0.1:<port> (ipa-advertise-host/-port).
   */
  agentPort?: number;
}

/** Settings both variants share: where images may come from, the ramdisk's console, and the fallback of unknown machines. */
function labEnvironment(options: ProductLabOptions): (layout: StackLayout) => Record<string, string> {
  const env = options.env ?? {};
  return (layout) => ({
    BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: options.imagesDir,
    BMAAS_PXE__KERNEL_APPEND_PARAMS: RAMDISK_KERNEL_ARGS,
    // The test agent serves its command API over plain HTTP (busybox has no TLS).
    BMAAS_AGENT__REQUIRE_TLS: 'false',
    BMAAS_PXE__IPXE_FALLBACK_SCRIPT: `${layout.httpUrls[0]}/${FALLBACK_FILE}`,
    ...(typeof env === 'function' ? env(layout) : env),
  });
}

/** The fallback script lives in the first conductor's HTTP root, next to the root boot.ipxe DHCP names. */
async function writeFallbackScript(workDir: string): Promise<void> {
  const root = join(workDir, 'http-0');
  await mkdir(root, { recursive: true });
  await writeFile(join(root, FALLBACK_FILE), FALLBACK_SCRIPT);
}

/** What to undo, registered as each piece starts; run() undoes it all, last first, past any failing step. */
class Teardown {
  private readonly undo: Array<() => Promise<unknown>> = [];
  add(step: () => Promise<unknown>): void {
    this.undo.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.undo.splice(0).reverse()) {
      await step().catch((error: Error) => console.warn(`[e2e] teardown step failed: ${error.message}`));
    }
  }
}

/**
 * Namespace variant (root): bridge 192.168.77.1/24, a tap per machine, dnsmasq
 * handing every iPXE client the first conductor's boot.ipxe, and the API and
 * conductors running inside the namespace on the bridge address. PostgreSQL
 * stays on the host, reached through a relay; the test reaches the API
 * through a Unix socket.
 */
export async function startNetnsProductLab(options: ProductLabOptions): Promise<ProductLab> {
  const teardown = new Teardown();
  try {
    const network = await LabNetwork.create();
    teardown.add(() => network.destroy());
    const database = new URL(options.databaseUrl);
    const pgSocket = join(options.workDir, 'pg.sock');
    const pgRelay: HostRelay = await startHostRelay(`unix:${pgSocket}`, `tcp:127.0.0.1:${database.port}`);
    teardown.add(() => pgRelay.stop());
    await network.portToHostSocket('127.0.0.1', Number(database.port), pgSocket);

    await writeFallbackScript(options.workDir);
    if (options.uefiGrub) await buildGrubHttpImage(join(options.workDir, 'http-0', GRUB_EFI_FILE));
    const bridge = network.ipv4;
    if (options.bmcReachesHttpRoot && options.conductors !== 1) throw new Error('bmcReachesHttpRoot: one conductor');
    const bmcHttpPort = options.bmcReachesHttpRoot ? await freePort() : undefined;
    const env = labEnvironment(options);
    const stack = await startProductStack({
      databaseUrl: options.databaseUrl,
      conductors: options.conductors,
      listenHost: bridge,
      publicHost: bridge,
      spawn: (command, args, spawnOptions) => network.spawn(command, args, spawnOptions),
      workDir: options.workDir,
      env: (layout) => ({
        ...(bmcHttpPort ? { BMAAS_DEPLOY__EXTERNAL_HTTP_URL: `http://127.0.0.1:${bmcHttpPort}` } : {}),
        ...env(layout),
      }),
    });
    teardown.add(() => stack.stop());
    const apiSocket = join(options.workDir, 'api.sock');
    await network.hostSocketToPort(apiSocket, bridge, stack.apiPort);
    if (bmcHttpPort) {
      // host 127.0.0.1:<port> -> a Unix socket -> the conductor's file server on the bridge
      const httpSocket = join(options.workDir, 'http-0-host.sock');
      await network.hostSocketToPort(httpSocket, bridge, stack.conductors[0]?.httpPort as number);
      const relay = await startHostRelay(`tcp:127.0.0.1:${bmcHttpPort}`, `unix:${httpSocket}`);
      teardown.add(() => relay.stop());
    }
    const dnsmasq =
      options.dhcp === false
        ? undefined
        : await startDnsmasq({
            network,
            bootUrl: `${stack.conductors[0]?.httpUrl}/boot.ipxe`,
            workDir: options.workDir,
            ...(options.uefiGrub ? { uefiHttpBootUrl: `${stack.conductors[0]?.httpUrl}/${GRUB_EFI_FILE}` } : {}),
          });
    if (dnsmasq) teardown.add(() => dnsmasq.stop());

    const machines: QemuMachine[] = [];
    teardown.add(() => Promise.all(machines.map((machine) => machine.stop())));
    const bmcs: MachineBmc[] = [];
    teardown.add(() => Promise.all(bmcs.map((bmc) => bmc.stop())));
    const redfishBmcs: RedfishMachineBmc[] = [];
    teardown.add(() => Promise.all(redfishBmcs.map((bmc) => bmc.stop())));
    return {
      stack,
      api: new ApiClient({ socketPath: apiSocket }),
      workDir: options.workDir,
      dnsmasq,
      async addMachine(name, mac, machineOptions = {}) {
        const tap = await network.addTap();
        const machine = await startQemuMachine({
          name,
          mac,
          workDir: options.workDir,
          powerControlled: true,
          net: { kind: 'tap', network, tap },
          ...machineOptions,
        });
        machines.push(machine);
        return machine;
      },
      async addBmcMachine(name, mac, machineOptions = {}) {
        const tap = await network.addTap();
        // Each BMC on its own address of the namespace, on the standard IPMI port.
        const bmc = await startMachineBmc({
          name,
          mac,
          net: { kind: 'tap', network, tap },
          address: `${BMC_ADDRESS_PREFIX}${BMC_ADDRESS_BASE + bmcs.length}`,
          port: 623,
          workDir: options.workDir,
          ...machineOptions,
        });
        bmcs.push(bmc);
        return bmc;
      },
      async addRedfishMachine(name, mac, machineOptions = {}) {
        const tap = await network.addTap();
        const bmc = await startRedfishMachineBmc({
          name,
          mac,
          net: { kind: 'tap', network, tap },
          workDir: options.workDir,
          ...machineOptions,
        });
        redfishBmcs.push(bmc);
        // The conductors run in the namespace: bridge:<port> there -> a Unix socket -> the service.
        const socket = join(options.workDir, `${name}-rf.sock`);
        const relay = await startHostRelay(`unix:${socket}`, `tcp:127.0.0.1:${bmc.port}`);
        teardown.add(() => relay.stop());
        const port = await freePort();
        await network.portToHostSocket(bridge, port, socket);
        return { bmc, driverInfo: bmc.driverInfo({ redfish_address: `http://${bridge}:${port}` }) };
      },
      async reachFromMachines(socketPath) {
        const port = await freePort();
        await network.portToHostSocket(bridge, port, socketPath);
        return `http://${bridge}:${port}`;
      },
      stop: () => teardown.run(),
    };
  } catch (error) {
    await teardown.run();
    throw error;
  }
}

/**
 * User-mode variant (no root needed): the product listens on host loopback;
 * each machine is on QEMU user-mode networking with restrict=on, gets its
 * address and the first conductor's boot.ipxe from QEMU's own DHCP, and
 * reaches the API and the file servers at GUESTFWD_ADDRESS through guestfwd
 * (the same port numbers as on the host).
 */
export async function startUserModeProductLab(options: ProductLabOptions): Promise<ProductLab> {
  const teardown = new Teardown();
  try {
    await writeFallbackScript(options.workDir);
    const stack = await startProductStack({
      databaseUrl: options.databaseUrl,
      conductors: options.conductors,
      listenHost: '127.0.0.1',
      publicHost: GUESTFWD_ADDRESS,
      spawn: spawnOnHost,
      workDir: options.workDir,
      env: labEnvironment({
        ...options,
        env: (layout) => ({
          ...(options.agentPort
            ? {
                BMAAS_PXE__KERNEL_APPEND_PARAMS: `${RAMDISK_KERNEL_ARGS} ipa-advertise-host=127.0.0.1 ipa-advertise-port=${options.agentPort}`,
              }
            : {}),
          ...(typeof options.env === 'function' ? options.env(layout) : options.env),
        }),
      }),
    });
    teardown.add(() => stack.stop());
    const forwards = [stack.apiPort, ...stack.conductors.map((conductor) => conductor.httpPort)].map((port) => ({
      guestPort: port,
      hostPort: port,
    }));
    const agentPort = options.agentPort;
    const machines: QemuMachine[] = [];
    teardown.add(() => Promise.all(machines.map((machine) => machine.stop())));
    const bmcs: MachineBmc[] = [];
    teardown.add(() => Promise.all(bmcs.map((bmc) => bmc.stop())));
    const bootUrl = `${stack.conductors[0]?.httpUrl}/boot.ipxe`;
    return {
      stack,
      api: new ApiClient(`http://127.0.0.1:${stack.apiPort}`),
      workDir: options.workDir,
      dnsmasq: undefined,
      async addMachine(name, mac, machineOptions = {}) {
        if (machines.length > 0 && agentPort)
          throw new Error('one machine per user-mode lab (its agent port is fixed)');
        const machine = await startQemuMachine({
          name,
          mac,
          workDir: options.workDir,
          powerControlled: true,
          net: {
            kind: 'user',
            bootUrl: `${stack.conductors[0]?.httpUrl}/boot.ipxe`,
            forwards,
            ...(agentPort ? { hostForwards: [{ hostPort: agentPort, guestPort: RAMDISK_AGENT_PORT }] } : {}),
          },
          ...machineOptions,
        });
        machines.push(machine);
        return machine;
      },
      async addBmcMachine(name, mac, machineOptions = {}) {
        const bmc = await startMachineBmc({
          name,
          mac,
          net: { kind: 'user', bootUrl, forwards },
          address: '127.0.0.1',
          port: await freePort(),
          workDir: options.workDir,
          ...machineOptions,
        });
        bmcs.push(bmc);
        return bmc;
      },
      async addRedfishMachine() {
        throw new Error('addRedfishMachine: namespace labs only');
      },
      async reachFromMachines() {
        throw new Error('reachFromMachines: namespace labs only');
      },
      stop: () => teardown.run(),
    };
  } catch (error) {
    await teardown.run();
    throw error;
  }
}

/** For ApiClient.waitForNode: inspection (or discovery) filled the node's properties and released its lock. */
export function inspected(node: NodeAnswer): boolean {
  return (node.properties as Record<string, unknown> | undefined)?.cpus !== undefined && node.reservation === null;
}

/** The node a lab machine is: iPXE (or GRUB) boot, direct deploy, QEMU power through the machine's QMP socket. */
export function nodeBodyFor(
  machine: QemuMachine,
  ramdisk: TestRamdisk,
  fields: { uuid: string; name: string; automatedClean?: boolean; bootInterface?: 'ipxe' | 'grub' },
): Record<string, unknown> {
  const grub = fields.bootInterface === 'grub';
  return {
    uuid: fields.uuid,
    name: fields.name,
    driver: 'fake-hardware',
    boot_interface: fields.bootInterface ?? 'ipxe',
    deploy_interface: 'direct',
    power_interface: 'qemu',
    management_interface: 'fake',
    driver_info: {
      deploy_kernel: ramdisk.kernel,
      deploy_ramdisk: ramdisk.initrd,
      // GRUB takes the ramdisk's kernel parameters from the node ([pxe] is iPXE's)
      ...(grub ? { kernel_append_params: RAMDISK_KERNEL_ARGS } : {}),
      qemu_qmp_socket: machine.qmpSocket,
    },
    ...(fields.automatedClean === undefined ? {} : { automated_clean: fields.automatedClean }),
  };
}

/** The node of a machine behind a BMC: the ipmi hardware type (ipmitool power and management), iPXE, direct deploy. */
export function ipmiNodeBodyFor(
  bmc: MachineBmc,
  ramdisk: TestRamdisk,
  fields: { uuid: string; name: string; driverInfo?: Record<string, unknown> },
): Record<string, unknown> {
  return {
    uuid: fields.uuid,
    name: fields.name,
    driver: 'ipmi',
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    power_interface: 'ipmitool',
    management_interface: 'ipmitool',
    driver_info: {
      ...bmc.driverInfo(fields.driverInfo),
      deploy_kernel: ramdisk.kernel,
      deploy_ramdisk: ramdisk.initrd,
    },
  };
}
