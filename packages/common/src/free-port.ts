import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port freePort hands out: clear of the well-known ports and of `npm start`'s 8080-8099. */
const LOWEST_TEST_PORT = 10_000;

/**
 * The ports the kernel never picks on its own (below
 * net.ipv4.ip_local_port_range), where a free port stays free until used.
 */
function portsOutsideEphemeralRange(): { low: number; high: number } | undefined {
  try {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const high = Number(first) - 1;
    return high - LOWEST_TEST_PORT >= 1000 ? { low: LOWEST_TEST_PORT, high } : undefined;
  } catch {
    return undefined;
  }
}

/** Ports this process handed out: never twice, even before their first user binds them. */
const handedOut = new Set<number>();

/**
 * Where this process looks for its next port: from a place of its own in
 * the range (its pid decides), then onwards, as the kernel hands out
 * ephemeral ports. Test files run in several processes at once, and a test
 * may take ports long before it binds them (a stack started and stopped
 * again): random picks from one range made two processes meet on a port now
 * and then; each going its own way from its own start, they do not.
 */
let cursor: number | undefined;

/** The next `count` consecutive ports from the cursor, within `range`, moving it past them. */
function nextPorts(range: { low: number; high: number }, count: number): number[] {
  const span = range.high - range.low + 1;
  cursor ??= range.low + ((process.pid * 7919) % span);
  if (cursor + count - 1 > range.high) cursor = range.low;
  const ports = Array.from({ length: count }, (_, i) => (cursor as number) + i);
  cursor += count;
  return ports;
}

/** Binds `port` on every IPv4 address (0: any), then lets it go; the port, or undefined when something holds it. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen(port, '0.0.0.0', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/**
 * A free TCP port for a server of a test, the bench or the lab, on any address. Chosen below the
 * kernel's ephemeral range (from this process's cursor, nextPorts): a port from that range (what listen(0) gives)
 * can be taken meanwhile as the local port of any outgoing connection, and
 * a conductor of an e2e lab then failed to listen on it (EADDRINUSE). The
 * probe binds the wildcard address, so a port in use on a lab bridge's
 * address counts as taken too. Where the range cannot be read, the kernel
 * chooses.
 */
export async function freePort(): Promise<number> {
  const range = portsOutsideEphemeralRange();
  for (let attempt = 0; range && attempt < 200; attempt++) {
    const [candidate] = nextPorts(range, 1) as [number];
    if (handedOut.has(candidate)) continue;
    const port = await probe(candidate);
    if (port !== undefined) {
      handedOut.add(port);
      return port;
    }
  }
  const port = await probe(0);
  if (port === undefined) throw new Error('no free TCP port');
  return port;
}

/** Whether nothing holds `port` on any IPv4 address: a server could listen on it now. */
export async function portIsFree(port: number): Promise<boolean> {
  return (await probe(port)) !== undefined;
}

/**
 * A base port such that base+1 … base+count are all free, for launchers
 * that number their conductors' ports from a base. Like freePort, below the
 * ephemeral range and never handed out twice in a process.
 */
export async function freePortBlock(count: number): Promise<number> {
  const range = portsOutsideEphemeralRange() ?? { low: LOWEST_TEST_PORT, high: 32_767 };
  for (let attempt = 0; attempt < 100; attempt++) {
    const ports = nextPorts(range, count);
    if (ports.some((port) => handedOut.has(port))) continue;
    let free = true;
    for (let i = 0; i < ports.length && free; i++) free = await portIsFree(ports[i] as number);
    if (free) {
      for (const port of ports) handedOut.add(port);
      return (ports[0] as number) - 1;
    }
  }
  throw new Error(`no block of ${count} free ports found`);
}
