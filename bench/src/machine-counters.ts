// What the machine did to every process during a load run, from the kernel's counters read
// before and after it: TCP retransmissions (/proc/net/snmp, /proc/net/netstat) and the CPU
// time the hypervisor took (steal, /proc/stat). A request whose segment needs a retransmission
// timeout waits at least the minimum RTO (200 ms on Linux) outside every process, and a
// machine whose CPUs are taken away stalls every process at once: a p99 of that size is then
// the machine's, not the server's. The counters are the machine's: other work in the same
// seconds counts too.
import { readFile } from 'node:fs/promises';

export interface MachineCounters {
  tcp: TcpCounters;
  /** CPU seconds taken by the hypervisor, all CPUs together (null where /proc/stat has no steal column). */
  stealSeconds: number | null;
}

export interface TcpCounters {
  /** Segments sent again (Tcp RetransSegs). */
  retransmittedSegments: number;
  /** Retransmission timeouts fired (TcpExt TCPTimeouts): each stalls its connection ≥ 200 ms. */
  timeouts: number;
  /** Tail loss probes sent (TcpExt TCPLossProbes): an early retransmission, ~10 ms on. */
  lossProbes: number;
}

/**
 * The counters of `text`, in the /proc/net/snmp format both files share: for each protocol a
 * line of names, then a line of values, each starting with `<Protocol>:`.
 */
export function parseProcNetCounters(text: string): Map<string, number> {
  const counters = new Map<string, number>();
  const lines = text.split('\n');
  for (let i = 0; i + 1 < lines.length; i++) {
    const names = (lines[i] as string).trim().split(/\s+/);
    const values = (lines[i + 1] as string).trim().split(/\s+/);
    const protocol = names[0];
    if (!protocol?.endsWith(':') || values[0] !== protocol || names.length !== values.length) continue;
    for (let k = 1; k < names.length; k++) {
      const value = Number(values[k]);
      if (Number.isFinite(value)) counters.set(`${protocol.slice(0, -1)}.${names[k]}`, value);
    }
    i++;
  }
  return counters;
}

/** Steal time in clock ticks from /proc/stat's first (all CPUs) line, its eighth value. */
export function parseStealTicks(procStat: string): number | null {
  const fields = procStat.split('\n', 1)[0]?.trim().split(/\s+/) ?? [];
  if (fields[0] !== 'cpu' || fields.length < 9) return null;
  const steal = Number(fields[8]);
  return Number.isFinite(steal) ? steal : null;
}

/** Linux reports /proc/stat in USER_HZ, 100 on every architecture it runs on here. */
const USER_HZ = 100;

/** The counters now, or undefined where /proc cannot be read (another system). */
export async function readMachineCounters(): Promise<MachineCounters | undefined> {
  let net: string;
  let stat: string;
  try {
    net = `${await readFile('/proc/net/snmp', 'utf8')}\n${await readFile('/proc/net/netstat', 'utf8')}`;
    stat = await readFile('/proc/stat', 'utf8');
  } catch {
    return undefined;
  }
  const counters = parseProcNetCounters(net);
  const steal = parseStealTicks(stat);
  return {
    tcp: {
      retransmittedSegments: counters.get('Tcp.RetransSegs') ?? 0,
      timeouts: counters.get('TcpExt.TCPTimeouts') ?? 0,
      lossProbes: counters.get('TcpExt.TCPLossProbes') ?? 0,
    },
    stealSeconds: steal === null ? null : steal / USER_HZ,
  };
}

/** What happened between two readings. */
export function machineCountersBetween(before: MachineCounters, after: MachineCounters): MachineCounters {
  return {
    tcp: {
      retransmittedSegments: after.tcp.retransmittedSegments - before.tcp.retransmittedSegments,
      timeouts: after.tcp.timeouts - before.tcp.timeouts,
      lossProbes: after.tcp.lossProbes - before.tcp.lossProbes,
    },
    stealSeconds:
      before.stealSeconds === null || after.stealSeconds === null ? null : after.stealSeconds - before.stealSeconds,
  };
}

/** `TCP: 0 retransmission timeouts, …; steal 0.00 s`, for a run's line. */
export function describeMachineCounters(counters: MachineCounters): string {
  const { tcp, stealSeconds } = counters;
  const steal = stealSeconds === null ? '' : `; CPU stolen by the hypervisor ${stealSeconds.toFixed(2)} s`;
  return `TCP: ${tcp.timeouts} retransmission timeouts, ${tcp.lossProbes} loss probes, ${tcp.retransmittedSegments} segments sent again${steal}`;
}
