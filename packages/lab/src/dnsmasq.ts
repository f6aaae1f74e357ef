// dnsmasq as the lab's DHCP server, inside a LabNetwork (on its bridge, or on a host of its
// own on the bridge): one static configuration for every machine, as in production; iPXE
// clients get the boot script URL.
import { join } from 'node:path';
import { type ExitStatus, exitOf, isRunning, spawned, stopProcess } from './child-process.js';
import { LAB_IPV4, LAB_IPV6, type LabNetwork, type NetworkHost } from './netns.js';
import { readIfExists, waitForFileMatch } from './wait.js';

export interface DnsmasqOptions {
  network: LabNetwork;
  /** The wildcard script every iPXE client is told to fetch, e.g. http://192.168.77.1:6385/boot.ipxe */
  bootUrl: string;
  /** Gets dnsmasq.log, the lease file and the pid file. */
  workDir: string;
  /**
   * The boot file UEFI HTTP Boot clients (vendor class HTTPClient) are told to fetch, e.g.
   * http://192.168.77.1:8081/grubx64.efi; none when unset.
   */
  uefiHttpBootUrl?: string;
  /** Run on this host of `network` (its eth0) instead of on the bridge, lending its own range. */
  host?: DnsmasqHost;
}

/** A host of the lab network (LabNetwork.addHost) that serves DHCP on its eth0. */
export interface DnsmasqHost {
  host: NetworkHost;
  /** First and last IPv4 address lent, in the host's /24. */
  range: readonly [string, string];
  /**
   * The /64 its router advertisements announce (iPXE otherwise waits for one), e.g. `fd82::`;
   * the host must have an address in it on eth0.
   */
  ipv6Prefix: string;
}

/** Where dnsmasq serves: the interface, the IPv4 range and the IPv6 prefix it advertises. */
function servedNetwork(options: DnsmasqOptions): { iface: string; first: string; last: string; ipv6Prefix: string } {
  if (!options.host) {
    return {
      iface: options.network.bridge,
      first: LAB_IPV4.dhcpFirst,
      last: LAB_IPV4.dhcpLast,
      ipv6Prefix: LAB_IPV6.prefix,
    };
  }
  const [first, last] = options.host.range;
  return { iface: 'eth0', first, last, ipv6Prefix: options.host.ipv6Prefix };
}

export interface Dnsmasq {
  readonly pid: number;
  readonly logPath: string;
  readonly exited: Promise<ExitStatus>;
  readLog(): Promise<string>;
  waitForLog(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Waits for the DHCPACK to mac (any case, colons); returns the address given. */
  waitForDhcpAck(mac: string, timeoutMs: number): Promise<string>;
  stop(): Promise<void>;
}

/** The command line; exported so a product test can show or reuse exactly what the lab runs. */
export function dnsmasqArgs(options: DnsmasqOptions): string[] {
  const { workDir } = options;
  const served = servedNetwork(options);
  return [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--port=0', // no DNS
    '--bind-interfaces',
    `--interface=${served.iface}`,
    `--dhcp-range=${served.first},${served.last},${LAB_IPV4.netmask},1h`,
    '--dhcp-authoritative',
    `--dhcp-leasefile=${join(workDir, 'dnsmasq.leases')}`,
    `--pid-file=${join(workDir, 'dnsmasq.pid')}`,
    '--dhcp-match=set:ipxe,175',
    `--dhcp-boot=tag:ipxe,${options.bootUrl}`,
    // OVMF's HTTP Boot sends vendor class HTTPClient:Arch:00016:…, and needs option 60 HTTPClient back.
    ...(options.uefiHttpBootUrl
      ? [
          '--dhcp-vendorclass=set:efihttp,HTTPClient',
          '--dhcp-option-force=tag:efihttp,60,HTTPClient',
          `--dhcp-boot=tag:efihttp,${options.uefiHttpBootUrl}`,
        ]
      : []),
    // Each of the next three saves every boot ~20 s of waiting:
    '--enable-ra', // iPXE would otherwise wait for IPv6 autoconfiguration
    `--dhcp-range=${served.ipv6Prefix},ra-only,${LAB_IPV6.prefixLength}`,
    '--dhcp-option=tag:ipxe,175,b0:01:01', // "no ProxyDHCP": iPXE stops waiting for one
    '--no-ping', // no ICMP probe before offering an address
    '--log-dhcp',
    `--log-facility=${join(workDir, 'dnsmasq.log')}`,
  ];
}

export async function startDnsmasq(options: DnsmasqOptions): Promise<Dnsmasq> {
  const logPath = join(options.workDir, 'dnsmasq.log');
  const spawnOn = options.host?.host ?? options.network;
  const child = spawnOn.spawn('dnsmasq', dnsmasqArgs(options), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const pid = await spawned(child);
  const exitedReason = (): string | null =>
    isRunning(child) ? null : `dnsmasq exited (${child.exitCode ?? child.signalCode}): ${stderr.trim()}`;
  const waitForLog = (pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> =>
    waitForFileMatch(logPath, pattern, { timeoutMs, abortReason: exitedReason });

  try {
    await waitForLog(/DHCP, IP range/, 10_000);
  } catch (error) {
    await stopProcess(child);
    throw error;
  }

  return {
    pid,
    logPath,
    exited: exitOf(child),
    readLog: () => readIfExists(logPath),
    waitForLog,
    async waitForDhcpAck(mac: string, timeoutMs: number): Promise<string> {
      const pattern = new RegExp(`DHCPACK\\(${servedNetwork(options).iface}\\) (\\S+) ${mac.toLowerCase()}`);
      const match = await waitForLog(pattern, timeoutMs);
      return match[1] ?? '';
    },
    async stop(): Promise<void> {
      await stopProcess(child);
    },
  };
}
