import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger, type Logger } from '@bmaas/common';
import pg from 'pg';
import { type Database, openDatabase } from '../connection.js';
import { EmbeddedPostgresServer } from '../embedded-postgres.js';
import { upgradeSchema } from '../migrations/index.js';

export { createNode, newNode } from './test-nodes.js';

/** Environment variable holding the admin URL of the test server (set by the global setup). */
export const TEST_DATABASE_URL_ENV = 'BMAAS_TEST_DATABASE_URL';
const TEMPLATE = 'bmaas_template';

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
 * A free TCP port for a test's server, on any address. Chosen below the
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

/**
 * A new directory under the system's temporary one for an embedded
 * PostgreSQL's data (a test database, a stack's state_path): mkdtemp makes
 * it 0700, and as root the server runs as the postgres user, which must reach
 * the data inside it; else the data is kept under /var/tmp instead, out of
 * reach of the test's clean-up.
 */
export function stateTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

export interface TestPostgres {
  /** Admin URL (database `postgres`). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway embedded PostgreSQL for a test run, with a migrated
 * template database every test database is copied from. An external server
 * can be used instead by setting BMAAS_TEST_DATABASE_URL beforehand.
 */
export async function startTestPostgres(logger: Logger = createSilentLogger()): Promise<TestPostgres> {
  const external = process.env[TEST_DATABASE_URL_ENV];
  if (external) {
    await prepareTemplate(external);
    return { url: external, stop: async () => {} };
  }
  const dir = stateTempDir('bmaas-test-pg-');
  const server = new EmbeddedPostgresServer({ dataDir: join(dir, 'data'), port: await freePort(), logger });
  const url = await server.start();
  await prepareTemplate(url);
  return {
    url,
    stop: async () => {
      await server.discard();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function prepareTemplate(adminUrl: string): Promise<void> {
  await adminQuery(adminUrl, `drop database if exists ${TEMPLATE}`);
  await adminQuery(adminUrl, `create database ${TEMPLATE}`);
  const db = openDatabase({ connection: withDatabase(adminUrl, TEMPLATE) });
  try {
    await upgradeSchema(db);
  } finally {
    await db.destroy();
  }
}

export interface TestDatabase {
  url: string;
  db: Database;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = process.env[TEST_DATABASE_URL_ENV];
  if (!adminUrl) throw new Error(`${TEST_DATABASE_URL_ENV} is not set: run tests through vitest's global setup`);
  const name = `bmaas_t_${randomBytes(6).toString('hex')}`;
  const template = options.migrated === false ? 'template0' : TEMPLATE;
  await adminQuery(adminUrl, `create database ${name} template ${template}`);
  const url = withDatabase(adminUrl, name);
  const db = openDatabase({ connection: url, maxPoolSize: 20 });
  return {
    url,
    db,
    drop: async () => {
      await db.destroy();
      await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
    },
  };
}
