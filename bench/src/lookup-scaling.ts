import { BOOT_LOOKUP_SQL, createStores, type Database, openDatabase, upgradeSchema } from '@bmaas/db';
import type { LoadGenerator, LoadResult } from './load-generator.js';
import { sample } from './macs.js';

/**
 * Filler nodes for the lookup-scaling part, inserted with SQL (it measures
 * the MAC lookup, not enrolment). Their MACs use another prefix than the
 * enrolled ones: 52:55 and the index in four bytes.
 */
export function fillerMac(index: number): string {
  const hex = index.toString(16).padStart(8, '0');
  return `52:55:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}:${hex.slice(6, 8)}`;
}

const FILLER_MAC_SQL = `'52:55:' || regexp_replace(lpad(to_hex(i), 8, '0'), '(..)(..)(..)(..)', '\\1:\\2:\\3:\\4')`;

/**
 * Inserts filler nodes `from` … `to - 1` (one port each), in batches. They
 * stay in `enroll`, as nodes nobody manages yet: the power state sync leaves
 * that state alone. As `available` nodes with fake power they were synced
 * every minute from then on, 30,000 locks and reads per conductor, on top of
 * every later step (the boot path at c=1 and the image storm).
 */
export async function insertFillerNodes(db: Database, from: number, to: number): Promise<void> {
  const batch = 20_000;
  for (let start = from; start < to; start += batch) {
    const end = Math.min(to, start + batch) - 1;
    await db.raw(
      `with source as (select i, gen_random_uuid() as uuid from generate_series(?::int, ?::int) as i),
       inserted as (
         insert into nodes (uuid, driver, boot_interface, deploy_interface, power_interface, management_interface, provision_state)
         select uuid, 'fake-hardware', 'ipxe', 'direct', 'fake', 'fake', 'enroll' from source
         returning id, uuid)
       insert into ports (uuid, address, node_id)
       select gen_random_uuid(), ${FILLER_MAC_SQL}, inserted.id from inserted join source using (uuid)`,
      [start, end],
    );
  }
  await db.raw('analyze nodes; analyze ports');
}

export interface LatencyStats {
  lookups: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export interface QueryScalePoint {
  nodes: number;
  /** Plan node types and indexes, e.g. "Nested Loop > Index Scan ports_address_unique > Index Scan nodes_pkey". */
  plan: string;
  latency: LatencyStats;
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function describePlan(plan: PlanNode): string {
  const self = plan['Index Name'] ? `${plan['Node Type']} ${plan['Index Name']}` : plan['Node Type'];
  const children = (plan.Plans ?? []).map(describePlan);
  return children.length ? `${self} > ${children.join(' + ')}` : self;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** One lookup at a time (as the API does per request), timed from the query to its rows. */
async function timeLookups(db: Database, macs: readonly string[], count: number): Promise<LatencyStats> {
  const ports = createStores(db).ports;
  for (const mac of sample(macs, 200)) await ports.bootLookup(mac);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const mac = macs[Math.floor(Math.random() * macs.length)] as string;
    const started = performance.now();
    const found = await ports.bootLookup(mac);
    times.push(performance.now() - started);
    if (!found) throw new Error(`lookup of ${mac} found nothing`);
  }
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return {
    lookups: count,
    p50Ms: round(percentile(times, 50)),
    p99Ms: round(percentile(times, 99)),
    meanMs: round(times.reduce((a, b) => a + b, 0) / count),
  };
}

async function measureQuery(db: Database, nodes: number, lookups: number): Promise<QueryScalePoint> {
  const macs = Array.from({ length: nodes }, (_, i) => fillerMac(i));
  const explained = await db.raw<{ rows: Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }> }>(
    `explain (format json) ${BOOT_LOOKUP_SQL}`,
    [macs[macs.length - 1] as string],
  );
  const plan = explained.rows[0]?.['QUERY PLAN'][0]?.Plan;
  return { nodes, plan: plan ? describePlan(plan) : 'unknown', latency: await timeLookups(db, macs, lookups) };
}

/**
 * The lookup query alone (PortStore.bootLookup, the API's query) on a
 * database of its own, with 1,000 nodes and then with `largeNodes`: the time
 * should not grow, as the plan is two unique-index probes.
 */
export async function measureLookupQueryScaling(
  mainDatabaseUrl: string,
  largeNodes: number,
  lookups: number,
): Promise<{ small: QueryScalePoint; large: QueryScalePoint }> {
  const name = `bench_lookup_${process.pid}`;
  const admin = openDatabase({ connection: mainDatabaseUrl, applicationName: 'bmaas-bench' });
  const url = new URL(mainDatabaseUrl);
  url.pathname = `/${name}`;
  try {
    await admin.raw(`create database "${name}"`);
    const db = openDatabase({ connection: url.toString(), applicationName: 'bmaas-bench', maxPoolSize: 2 });
    try {
      await upgradeSchema(db);
      const smallNodes = Math.min(1000, largeNodes);
      await insertFillerNodes(db, 0, smallNodes);
      const small = await measureQuery(db, smallNodes, lookups);
      await insertFillerNodes(db, smallNodes, largeNodes);
      const large = await measureQuery(db, largeNodes, lookups);
      return { small, large };
    } finally {
      await db.destroy();
    }
  } finally {
    await admin.raw(`drop database if exists "${name}"`).catch(() => undefined);
    await admin.destroy();
  }
}

export interface ApiScalePoint {
  nodes: number;
  load: LoadResult;
}

/**
 * The whole `/v1/boot` path at concurrency 1 (latency, not throughput) with
 * the enrolled nodes, then again once filler nodes bring the table to
 * `largeNodes`. Requests still ask for the enrolled (rendered) nodes.
 */
export async function measureApiLookupScaling(options: {
  databaseUrl: string;
  apiUrl: string;
  enrolledMacs: readonly string[];
  largeNodes: number;
  durationSeconds: number;
  generator: LoadGenerator;
}): Promise<{ small: ApiScalePoint; large: ApiScalePoint }> {
  const target = {
    baseUrl: options.apiUrl,
    macs: options.enrolledMacs,
    concurrency: 1,
    durationSeconds: options.durationSeconds,
  };
  const small = { nodes: options.enrolledMacs.length, load: await options.generator.run(target) };
  const db = openDatabase({ connection: options.databaseUrl, applicationName: 'bmaas-bench', maxPoolSize: 2 });
  try {
    await insertFillerNodes(db, 0, Math.max(0, options.largeNodes - options.enrolledMacs.length));
  } finally {
    await db.destroy();
  }
  const large = {
    nodes: Math.max(options.largeNodes, options.enrolledMacs.length),
    load: await options.generator.run(target),
  };
  return { small, large };
}
