// A private network for lab machines: a network namespace with one bridge
// (IPv4 + IPv6 ULA), one tap per machine, and the processes run inside it.
// Nothing here touches the host's own network; `ip netns del` removes it all.
import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type RunResult, run, stopProcess, waitForOutputLine } from './child-process.js';
import { killNow, onAbnormalExit } from './exit-cleanup.js';

export const LAB_BRIDGE = 'br0';
export const LAB_IPV4 = {
  address: '192.168.77.1',
  prefixLength: 24,
  netmask: '255.255.255.0',
  dhcpFirst: '192.168.77.100',
  dhcpLast: '192.168.77.200',
} as const;
export const LAB_IPV6 = { prefix: 'fd77::', address: 'fd77::1', prefixLength: 64 } as const;

const RELAY_SCRIPT = fileURLToPath(new URL('../assets/socket-relay.mjs', import.meta.url));
let namesTaken = 0;

export class LabNetwork {
  readonly bridge = LAB_BRIDGE;
  readonly ipv4 = LAB_IPV4.address;
  readonly ipv6 = LAB_IPV6.address;
  private readonly taps: string[] = [];
  private readonly hosts: NetworkHost[] = [];
  private readonly children = new Set<ChildProcess>();
  private destroyed = false;
  private readonly forgetExitCleanup = onAbnormalExit(() => this.destroySync());

  private constructor(readonly name: string) {}

  /** Creates a namespace with a free name (<prefix>-<pid>-<n>) and its bridge. */
  static async create(prefix = 'bmaas-e2e'): Promise<LabNetwork> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const name = `${prefix}-${process.pid}-${namesTaken++}`;
      try {
        await run('ip', ['netns', 'add', name]);
      } catch (error) {
        if (/exists/i.test((error as Error).message)) continue;
        throw error;
      }
      const network = new LabNetwork(name);
      try {
        await network.configureBridge();
        return network;
      } catch (error) {
        await network.destroy();
        throw error;
      }
    }
    throw new Error('no free network namespace name');
  }

  /** Adds a tap on the bridge (tap0, tap1, ...) for one machine; returns its name. */
  async addTap(): Promise<string> {
    const tap = `tap${this.taps.length}`;
    this.taps.push(tap);
    await this.ip('tuntap', 'add', 'dev', tap, 'mode', 'tap');
    await this.ip('link', 'set', tap, 'master', this.bridge);
    await this.ip('link', 'set', tap, 'up');
    return tap;
  }

  /**
   * A "host" on the bridge: a namespace of its own (`<network>-<name>`) whose eth0, at
   * `address` of the lab's subnet, is one end of a veth pair; the other end (`vh<n>`) is a
   * port of the bridge. Processes spawned on it have that address and nothing else; cut() and
   * restore() take the bridge's end down and up (a pulled and replugged cable). It goes with
   * the network.
   */
  async addHost(name: string, address: string): Promise<NetworkHost> {
    this.assertAlive();
    const port = `vh${this.hosts.length}`;
    const namespace = `${this.name}-${name}`;
    await run('ip', ['netns', 'add', namespace]);
    const host = new NetworkHost(this, name, namespace, address, port);
    this.hosts.push(host);
    await run('ip', ['-n', this.name, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace]);
    await this.ip('link', 'set', port, 'master', this.bridge);
    await this.ip('link', 'set', port, 'up');
    await run('ip', ['-n', namespace, 'link', 'set', 'lo', 'up']);
    await run('ip', ['-n', namespace, 'addr', 'add', `${address}/${LAB_IPV4.prefixLength}`, 'dev', 'eth0']);
    await run('ip', ['-n', namespace, 'link', 'set', 'eth0', 'up']);
    return host;
  }

  /** One more address of the namespace (on its loopback), e.g. where relays of host services listen. */
  async addLocalAddress(address: string): Promise<void> {
    await this.ip('addr', 'add', `${address}/32`, 'dev', 'lo');
  }

  /**
   * A veth pair from the host onto the bridge, the host end at `hostAddress` of the lab's
   * subnet: host processes reach the machines' addresses directly (and only those). The pair
   * goes with the namespace.
   */
  async linkToHost(hostInterface: string, hostAddress: string): Promise<void> {
    const inside = 'tohost0';
    await run('ip', ['link', 'add', hostInterface, 'type', 'veth', 'peer', 'name', inside, 'netns', this.name]);
    await this.ip('link', 'set', inside, 'master', this.bridge);
    await this.ip('link', 'set', inside, 'up');
    // no router advertisements taken on the host side: IPv4 only
    await writeFile(`/proc/sys/net/ipv6/conf/${hostInterface}/disable_ipv6`, '1');
    await run('ip', ['addr', 'add', `${hostAddress}/${LAB_IPV4.prefixLength}`, 'dev', hostInterface]);
    await run('ip', ['link', 'set', hostInterface, 'up']);
  }

  /** Starts a command inside the namespace; its PID is the command's (ip netns exec execs it). */
  spawn(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    return this.spawnIn(this.name, command, args, options);
  }

  /** Runs a command inside the namespace to completion. */
  exec(command: string, args: readonly string[]): Promise<RunResult> {
    this.assertAlive();
    return run('ip', ['netns', 'exec', this.name, command, ...args]);
  }

  /** @internal spawn() in this namespace or one of its hosts': stopped with the network. */
  spawnIn(namespace: string, command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    this.assertAlive();
    const child = spawn('ip', ['netns', 'exec', namespace, command, ...args], { stdio: 'ignore', ...options });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** @internal `ip` in the bridge's namespace (the hosts' cables). */
  async ip(...args: string[]): Promise<void> {
    await run('ip', ['-n', this.name, ...args]);
  }

  /**
   * Lets machines in the namespace reach a host service listening on a Unix socket,
   * at tcp://host:port inside the namespace (the socket file is shared, the network not).
   */
  async portToHostSocket(host: string, port: number, socketPath: string): Promise<ChildProcess> {
    return this.startRelay(`tcp:${bracketed(host)}:${port}`, `unix:${socketPath}`);
  }

  /** Lets the host reach a TCP service inside the namespace through a Unix socket it can connect to. */
  async hostSocketToPort(socketPath: string, host: string, port: number): Promise<ChildProcess> {
    return this.startRelay(`unix:${socketPath}`, `tcp:${bracketed(host)}:${port}`);
  }

  /** Stops everything started inside, then deletes the namespace (with its bridge and taps). */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    this.forgetExitCleanup();
    await Promise.all([...this.children].map((child) => stopProcess(child)));
    for (const host of this.hosts) await run('ip', ['netns', 'del', host.namespace]).catch(() => {});
    await run('ip', ['netns', 'del', this.name]).catch(() => {});
  }

  private async configureBridge(): Promise<void> {
    await this.ip('link', 'set', 'lo', 'up');
    await this.ip('link', 'add', this.bridge, 'type', 'bridge');
    await this.ip('addr', 'add', `${LAB_IPV4.address}/${LAB_IPV4.prefixLength}`, 'dev', this.bridge);
    // nodad: the address is usable at once, so dnsmasq can send router advertisements right away
    await this.ip('-6', 'addr', 'add', `${LAB_IPV6.address}/${LAB_IPV6.prefixLength}`, 'dev', this.bridge, 'nodad');
    await this.ip('link', 'set', this.bridge, 'up');
  }

  private async startRelay(from: string, to: string): Promise<ChildProcess> {
    const relay = this.spawn(process.execPath, [RELAY_SCRIPT, 'listen', from, to], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await waitForOutputLine(relay, /^ready$/, 10_000);
    return relay;
  }

  private assertAlive(): void {
    if (this.destroyed) throw new Error(`network namespace ${this.name} was destroyed`);
  }

  private destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const child of this.children) killNow(child.pid);
    for (const namespace of [...this.hosts.map((h) => h.namespace), this.name]) {
      try {
        execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' });
      } catch {
        // nothing left to delete
      }
    }
  }
}

/**
 * A tap (`tap`) on a bridge of the host's own namespace that something else made and
 * serves, e.g. a compose stack's provisioning bridge with its dnsmasq container, for a
 * machine whose QEMU runs on the host (MachineNetwork `{ kind: 'tap', tap }`, no network).
 * Returns what removes it.
 */
export async function addHostTap(bridge: string, tap: string): Promise<() => Promise<void>> {
  await run('ip', ['tuntap', 'add', 'dev', tap, 'mode', 'tap']);
  const remove = async () => {
    await run('ip', ['link', 'del', tap]).catch(() => {});
  };
  try {
    await run('ip', ['link', 'set', tap, 'master', bridge]);
    await run('ip', ['link', 'set', tap, 'up']);
  } catch (error) {
    await remove();
    throw error;
  }
  return remove;
}

/** A host of a LabNetwork (addHost): its own namespace and address, one cable to the bridge. */
export class NetworkHost {
  constructor(
    private readonly network: LabNetwork,
    readonly name: string,
    readonly namespace: string,
    readonly address: string,
    /** The bridge's end of its cable, in the network's namespace. */
    readonly port: string,
  ) {}

  /** Starts a command on this host (stopped with the network); its PID is the command's. */
  spawn(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    return this.network.spawnIn(this.namespace, command, args, options);
  }

  /** Runs a command on this host to completion. */
  exec(command: string, args: readonly string[]): Promise<RunResult> {
    return run('ip', ['netns', 'exec', this.namespace, command, ...args]);
  }

  /** Pulls the cable: `ip link set <port> down` on the bridge's end. */
  async cut(): Promise<void> {
    await this.network.ip('link', 'set', this.port, 'down');
  }

  /** Plugs it back in. */
  async restore(): Promise<void> {
    await this.network.ip('link', 'set', this.port, 'up');
  }
}

function bracketed(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

let probe: Promise<string | null> | undefined;

/** Why lab namespaces cannot be used here (null when they can): needs root, `ip netns`, /dev/net/tun. */
export function netnsUnavailableReason(): Promise<string | null> {
  probe ??= probeNetns();
  return probe;
}

async function probeNetns(): Promise<string | null> {
  if (process.platform !== 'linux') return `network namespaces need Linux, not ${process.platform}`;
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const name = `bmaas-e2e-probe-${process.pid}`;
  try {
    await run('ip', ['netns', 'add', name]);
  } catch (error) {
    return `ip netns add failed: ${(error as Error).message}`;
  }
  try {
    await run('ip', ['-n', name, 'tuntap', 'add', 'dev', 'probe0', 'mode', 'tap']);
    return null;
  } catch (error) {
    return `cannot create a tap device: ${(error as Error).message}`;
  } finally {
    await run('ip', ['netns', 'del', name]).catch(() => {});
  }
}
