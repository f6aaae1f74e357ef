// The product in a lab: API + conductors wired to machines either on a namespace bridge with
// dnsmasq (one static DHCP config, as in production) or on QEMU user-mode networking.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiClient } from './api-client.js';
import { type Dnsmasq, startDnsmasq } from './dnsmasq.js';
import { type HostRelay, startHostRelay } from './host-relay.js';
import { LabNetwork } from './netns.js';
import { type ProductStack, type StackLayout, spawnOnHost, startProductStack } from './product-stack.js';
import { GUESTFWD_ADDRESS, type MachineHardware, type QemuMachine, startQemuMachine } from './qemu.js';
import { RAMDISK_KERNEL_ARGS, type TestRamdisk } from './ramdisk.js';

/** Printed by the fallback script the root boot.ipxe chains when no NIC has a boot configuration. */
export const FALLBACK_MARKER = 'E2E-FALLBACK';
const FALLBACK_FILE = 'e2e-fallback.ipxe';
/** Returning from the fallback ends iPXE; the BIOS has nothing else to boot and reboots, as a real machine would. */
const FALLBACK_SCRIPT = `#!ipxe\necho ${FALLBACK_MARKER} no boot configuration for \${net0/mac}\nexit 0\n`;

export interface ProductLab {
  readonly stack: ProductStack;
  readonly api: ApiClient;
  readonly workDir: string;
  /** dnsmasq, in the namespace variant. */
  readonly dnsmasq: Dnsmasq | undefined;
  /** A diskless machine with one NIC, powered off until the product powers it on through `qmpSocket`. */
  addMachine(name: string, mac: string, hardware?: MachineHardware): Promise<QemuMachine>;
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
}

/** Settings both variants share: the ramdisk's console, and the fallback of unknown machines. */
function labEnvironment(env: ProductLabOptions['env'] = {}): (layout: StackLayout) => Record<string, string> {
  return (layout) => ({
    BMAAS_PXE__KERNEL_APPEND_PARAMS: RAMDISK_KERNEL_ARGS,
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
    const bridge = network.ipv4;
    const stack = await startProductStack({
      databaseUrl: options.databaseUrl,
      conductors: options.conductors,
      listenHost: bridge,
      publicHost: bridge,
      spawn: (command, args, spawnOptions) => network.spawn(command, args, spawnOptions),
      workDir: options.workDir,
      env: labEnvironment(options.env),
    });
    teardown.add(() => stack.stop());
    const apiSocket = join(options.workDir, 'api.sock');
    await network.hostSocketToPort(apiSocket, bridge, stack.apiPort);
    const dnsmasq = await startDnsmasq({
      network,
      bootUrl: `${stack.conductors[0]?.httpUrl}/boot.ipxe`,
      workDir: options.workDir,
    });
    teardown.add(() => dnsmasq.stop());

    const machines: QemuMachine[] = [];
    teardown.add(() => Promise.all(machines.map((machine) => machine.stop())));
    return {
      stack,
      api: new ApiClient({ socketPath: apiSocket }),
      workDir: options.workDir,
      dnsmasq,
      async addMachine(name, mac, hardware) {
        const tap = await network.addTap();
        const machine = await startQemuMachine({
          name,
          mac,
          workDir: options.workDir,
          powerControlled: true,
          net: { kind: 'tap', network, tap },
          ...(hardware ? { hardware } : {}),
        });
        machines.push(machine);
        return machine;
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
      env: labEnvironment(options.env),
    });
    teardown.add(() => stack.stop());
    const forwards = [stack.apiPort, ...stack.conductors.map((conductor) => conductor.httpPort)].map((port) => ({
      guestPort: port,
      hostPort: port,
    }));
    const machines: QemuMachine[] = [];
    teardown.add(() => Promise.all(machines.map((machine) => machine.stop())));
    return {
      stack,
      api: new ApiClient({ host: '127.0.0.1', port: stack.apiPort }),
      workDir: options.workDir,
      dnsmasq: undefined,
      async addMachine(name, mac) {
        const machine = await startQemuMachine({
          name,
          mac,
          workDir: options.workDir,
          powerControlled: true,
          net: { kind: 'user', bootUrl: `${stack.conductors[0]?.httpUrl}/boot.ipxe`, forwards },
        });
        machines.push(machine);
        return machine;
      },
      stop: () => teardown.run(),
    };
  } catch (error) {
    await teardown.run();
    throw error;
  }
}

/** The node a lab machine is: iPXE boot, direct deploy, QEMU power through the machine's QMP socket. */
export function nodeBodyFor(
  machine: QemuMachine,
  ramdisk: TestRamdisk,
  fields: { uuid: string; name: string; automatedClean?: boolean },
): Record<string, unknown> {
  return {
    uuid: fields.uuid,
    name: fields.name,
    driver: 'fake-hardware',
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    power_interface: 'qemu',
    management_interface: 'fake',
    driver_info: {
      deploy_kernel: ramdisk.kernel,
      deploy_ramdisk: ramdisk.initrd,
      qemu_qmp_socket: machine.qmpSocket,
    },
    ...(fields.automatedClean === undefined ? {} : { automated_clean: fields.automatedClean }),
  };
}
