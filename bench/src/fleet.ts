// `npm run bench -- --fleet N`: what a conductor costs per machine it watches. N nodes of the
// redfish hardware type, each behind its own simulated BMC (the fleet of @bmaas/redfish-bmc, a
// process of its own), enrolled in steps (a tenth, then all) on the conductors of one stack;
// at each step the power state sync (with health) runs every interval and the bench measures,
// interval by interval: the nodes whose BMC was not read within it and the oldest reading (seen
// from the BMCs), the conductors' CPU share and RSS, BMC requests a second, the most requests
// in flight to one BMC, and the conductors' database statements per node read.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ApiClient } from '@bmaas/api-client';
import { mapLimit, parsePrometheusText, sampleSum } from '@bmaas/common';
import { openDatabase } from '@bmaas/db';
import { type FleetStats, fleetAddress } from '@bmaas/redfish-bmc';
import type { Stack } from '@bmaas/stack';
import { ResourceMonitor } from './process-stats.js';
import { ServedProcess } from './served-process.js';

const FLEET_MAIN = fileURLToPath(new URL('./fleet-main.js', import.meta.resolve('@bmaas/redfish-bmc')));

export interface FleetBenchOptions {
  /** Nodes (and BMCs) at the last step. */
  nodes: number;
  /** Node counts measured, ascending; the last is `nodes`. */
  steps: number[];
  conductors: number;
  /** [conductor]sync_power_state_interval, seconds. */
  intervalSeconds: number;
  /** Intervals measured at each step (after the one that reads every node for the first time). */
  intervals: number;
  /** The fleet's latency and fault rates. */
  latency: { medianMs: number; p99Ms: number; maxMs: number };
  errorRate: number;
  timeoutRate: number;
}

/** One measured interval at one step. */
export interface FleetInterval {
  seconds: number;
  /** Nodes whose BMC's system was not read within the interval, ÷ nodes. */
  notReadShare: number;
  /** Age of the oldest last reading at the interval's end, seconds; null: a node was never read. */
  oldestReadingSeconds: number | null;
  bmcRequestsPerSecond: number;
  /** Each conductor's CPU seconds ÷ the interval: its share of one core. */
  conductorCpuShare: number[];
  conductorPeakRssMb: number[];
  /** The conductors' statements to PostgreSQL in the interval ÷ nodes read in it. */
  dbQueriesPerNodeRead: number | null;
  postgresCpuShare: number;
  fleetCpuShare: number;
}

export interface FleetStep {
  nodes: number;
  /** Seconds from the step's enrolment until every node had been read once (null: not within the bound). */
  firstFullReadingSeconds: number | null;
  intervals: FleetInterval[];
  /** Most requests in flight to one BMC so far, and requests that met another in flight. */
  maxInFlightPerBmc: number;
  overlappingRequests: number;
  /** Answers of the fleet at the step's end by status (`timeout`: never answered). */
  answers: Record<string, number>;
  sessionsOpened: number;
  /** Nodes in maintenance at the step's end (power failure after repeated failed reads). */
  maintenance: number;
}

export interface FleetReport {
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; loadAverageBefore: number[]; loadAverageAfter: number[]; node: string };
  options: FleetBenchOptions;
  steps: FleetStep[];
}

/** BMCs per fleet process: each BMC is a listening socket, and a process may hold 20,000 descriptors here. */
const BMCS_PER_PROCESS = 15_000;

/** The fleet's processes: what nodes need to reach their BMCs, and the fleet's counters. */
export interface RunningFleet {
  processes: ServedProcess[];
  port: number;
  username: string;
  password: string;
  systemPath: string;
  address(index: number): string;
  /** The counters of the first `count` BMCs over every process (sums; ages and in-flight: the most). */
  stats(since: number, count: number): Promise<FleetStats>;
  stop(): Promise<void>;
}

/** Starts fleet-main.js (one process per 15,000 BMCs, on one port) and waits for their ready lines. */
export async function startFleetProcesses(options: FleetBenchOptions, firstAddress: string): Promise<RunningFleet> {
  const shards: Array<{ first: number; count: number }> = [];
  for (let first = 0; first < options.nodes; first += BMCS_PER_PROCESS) {
    shards.push({ first, count: Math.min(BMCS_PER_PROCESS, options.nodes - first) });
  }
  const started: Array<{ process: ServedProcess; ready: Record<string, unknown> }> = [];
  try {
    for (const shard of shards) {
      const port = started[0]?.ready.port;
      const password = started[0]?.ready.password;
      started.push(
        await startFleetProcess(options, fleetAddress(firstAddress, shard.first), shard.count, {
          ...(port !== undefined ? { port: String(port) } : {}),
          ...(password !== undefined ? { password: String(password) } : {}),
        }),
      );
    }
  } catch (error) {
    await Promise.all(started.map((s) => s.process.stop()));
    throw error;
  }
  const first = started[0]?.ready as Record<string, unknown>;
  return {
    processes: started.map((s) => s.process),
    port: Number(first.port),
    username: String(first.username),
    password: String(first.password),
    systemPath: String(first.systemPath),
    address: (index) => fleetAddress(firstAddress, index),
    stats: async (since, count) => {
      const parts = await Promise.all(
        shards.map(async (shard, i) => {
          const inShard = Math.max(0, Math.min(shard.count, count - shard.first));
          const control = String(started[i]?.ready.control);
          const response = await fetch(`${control}/stats?since=${since}&count=${inShard}`);
          return (await response.json()) as FleetStats;
        }),
      );
      const sum = (pick: (s: FleetStats) => number) => parts.reduce((total, s) => total + pick(s), 0);
      const answers: Record<string, number> = {};
      for (const part of parts) for (const [k, n] of Object.entries(part.answers)) answers[k] = (answers[k] ?? 0) + n;
      const read = parts.filter((p) => p.bmcs > p.neverRead);
      return {
        bmcs: sum((s) => s.bmcs),
        requests: sum((s) => s.requests),
        answers,
        sessionsOpened: sum((s) => s.sessionsOpened),
        sessionsOpen: sum((s) => s.sessionsOpen),
        maxInFlight: Math.max(0, ...parts.map((s) => s.maxInFlight)),
        overlapping: sum((s) => s.overlapping),
        neverRead: sum((s) => s.neverRead),
        oldestReadingMs: Math.max(0, ...read.map((s) => s.oldestReadingMs)),
        notReadSince: sum((s) => s.notReadSince ?? 0),
        changes: sum((s) => s.changes),
      };
    },
    stop: async () => {
      await Promise.all(started.map((s) => s.process.stop()));
    },
  };
}

/** One fleet process for `count` BMCs from `firstAddress`; its ready line. */
async function startFleetProcess(
  options: FleetBenchOptions,
  firstAddress: string,
  count: number,
  shared: { port?: string; password?: string },
): Promise<{ process: ServedProcess; ready: Record<string, unknown> }> {
  const args = [
    FLEET_MAIN,
    ...['--count', String(count), '--first-address', firstAddress],
    ...(shared.port ? ['--port', shared.port] : []),
    ...['--median-ms', String(options.latency.medianMs), '--p99-ms', String(options.latency.p99Ms)],
    ...['--max-ms', String(options.latency.maxMs)],
    ...['--error-rate', String(options.errorRate), '--timeout-rate', String(options.timeoutRate)],
  ];
  const env = { ...process.env, ...(shared.password ? { REDFISH_FLEET_PASSWORD: shared.password } : {}) };
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    let errors = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    lines.once('line', (line) => resolve(JSON.parse(line) as Record<string, unknown>));
    child.once('exit', (code) => reject(new Error(`the BMC fleet exited (${code}) before it was ready: ${errors}`)));
  });
  return { process: new ServedProcess('bmc-fleet', child, String(ready.control)), ready };
}

/** The conductors' statement counters (bmaas_conductor_database_queries_total), summed. */
async function conductorQueries(stack: Stack): Promise<number | null> {
  let total = 0;
  for (const conductor of stack.conductors) {
    const response = await fetch(`http://${conductor.hostname}/metrics`).catch(() => undefined);
    if (!response?.ok) return null;
    total += sampleSum(parsePrometheusText(await response.text()), 'bmaas_conductor_database_queries_total');
  }
  return total;
}

/** Creates nodes `from`…`to - 1` through POST /v1/nodes/bulk, each with its BMC, then makes them manageable in SQL. */
async function enrolFleetNodes(
  api: ApiClient,
  databaseUrl: string,
  fleet: RunningFleet,
  from: number,
  to: number,
  progress: (line: string) => void,
): Promise<number> {
  const started = performance.now();
  const batches: number[] = [];
  for (let first = from; first < to; first += 500) batches.push(first);
  await mapLimit(batches, 2, async (first) => {
    const nodes = Array.from({ length: Math.min(500, to - first) }, (_, i) => {
      const index = first + i;
      return {
        name: `fleet-${String(index).padStart(6, '0')}`,
        driver: 'redfish',
        driver_info: {
          redfish_address: `http://${fleet.address(index)}:${fleet.port}`,
          redfish_username: fleet.username,
          redfish_password: fleet.password,
          redfish_system_id: fleet.systemPath,
        },
      };
    });
    await api.expect(201, 'POST', '/v1/nodes/bulk', { nodes });
  });
  const seconds = (performance.now() - started) / 1000;
  // Straight to manageable (the sync leaves nodes in enroll alone): `manage` would read each BMC once more.
  const db = openDatabase({ connection: databaseUrl, applicationName: 'bmaas-bench', maxPoolSize: 1 });
  try {
    await db.raw(
      `update nodes set provision_state = 'manageable' where driver = 'redfish' and provision_state = 'enroll'`,
    );
  } finally {
    await db.destroy();
  }
  progress(`enrolled nodes ${from}…${to - 1} in ${seconds.toFixed(1)} s, made manageable`);
  return seconds;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs every step on a started stack and fleet. */
export async function measureFleet(
  options: FleetBenchOptions,
  deps: {
    api: ApiClient;
    stack: Stack;
    fleet: RunningFleet;
    postgresPids: () => number[];
    progress: (line: string) => void;
    /** Called as the last interval of a step starts and as it ends. */
    onLastInterval?: (() => void) | undefined;
  },
): Promise<FleetStep[]> {
  const { api, stack, fleet, progress } = deps;
  const steps: FleetStep[] = [];
  let enrolled = 0;
  const intervalMs = options.intervalSeconds * 1000;
  for (const count of options.steps) {
    await enrolFleetNodes(api, stack.databaseUrl, fleet, enrolled, count, progress);
    const enrolledAt = Date.now();
    enrolled = count;
    // The first reading of every node (their power state unknown until then), bounded by three intervals.
    let firstFullReadingSeconds: number | null = null;
    const bound = enrolledAt + 3 * intervalMs + 30_000;
    while (Date.now() < bound) {
      const stats = await fleet.stats(0, count);
      if (stats.neverRead === 0) {
        firstFullReadingSeconds = (Date.now() - enrolledAt) / 1000;
        break;
      }
      await sleep(1000);
    }
    progress(
      `${count} nodes: ${firstFullReadingSeconds === null ? 'not every node read' : `every node read once after ${firstFullReadingSeconds.toFixed(1)} s`}; measuring ${options.intervals} intervals of ${options.intervalSeconds} s…`,
    );
    const intervals: FleetInterval[] = [];
    for (let i = 0; i < options.intervals; i++) {
      const monitor = new ResourceMonitor(
        new Map<string, () => number[]>([
          ...stack.conductors.map((c): [string, () => number[]] => [c.name, () => [stack.pidOf(c.name) ?? -1]]),
          ['postgres', deps.postgresPids],
          ['fleet', () => fleet.processes.map((p) => p.pid)],
        ]),
      );
      const since = Date.now();
      const before = await fleet.stats(since, count);
      const queriesBefore = await conductorQueries(stack);
      const last = i === options.intervals - 1;
      if (last) deps.onLastInterval?.();
      monitor.start(1000);
      await sleep(intervalMs);
      const use = monitor.stop();
      if (last) deps.onLastInterval?.();
      const after = await fleet.stats(since, count);
      const queriesAfter = await conductorQueries(stack);
      const seconds = (Date.now() - since) / 1000;
      const nodesRead = count - (after.notReadSince ?? count);
      const interval: FleetInterval = {
        seconds,
        notReadShare: (after.notReadSince ?? count) / count,
        oldestReadingSeconds: after.neverRead > 0 ? null : after.oldestReadingMs / 1000,
        bmcRequestsPerSecond: (after.requests - before.requests) / seconds,
        conductorCpuShare: stack.conductors.map((c) => (use.get(c.name)?.cpuSeconds ?? 0) / seconds),
        conductorPeakRssMb: stack.conductors.map((c) => use.get(c.name)?.peakRssMb ?? 0),
        dbQueriesPerNodeRead:
          queriesBefore === null || queriesAfter === null || nodesRead === 0
            ? null
            : (queriesAfter - queriesBefore) / nodesRead,
        postgresCpuShare: (use.get('postgres')?.cpuSeconds ?? 0) / seconds,
        fleetCpuShare: (use.get('fleet')?.cpuSeconds ?? 0) / seconds,
      };
      intervals.push(interval);
      progress(`${count} nodes, interval ${i + 1}: ${renderInterval(interval)}`);
    }
    const end = await fleet.stats(0, count);
    const db = openDatabase({ connection: stack.databaseUrl, applicationName: 'bmaas-bench', maxPoolSize: 1 });
    let maintenance = 0;
    try {
      const rows = (await db.raw(`select count(*)::int as n from nodes where driver = 'redfish' and maintenance`))
        .rows as Array<{ n: number }>;
      maintenance = rows[0]?.n ?? 0;
    } finally {
      await db.destroy();
    }
    steps.push({
      nodes: count,
      firstFullReadingSeconds,
      intervals,
      maxInFlightPerBmc: end.maxInFlight,
      overlappingRequests: end.overlapping,
      answers: end.answers,
      sessionsOpened: end.sessionsOpened,
      maintenance,
    });
  }
  return steps;
}

const pct = (share: number) => `${(share * 100).toFixed(share < 0.1 ? 2 : 1)} %`;

function renderInterval(interval: FleetInterval): string {
  return [
    `not read ${pct(interval.notReadShare)}`,
    `oldest reading ${interval.oldestReadingSeconds === null ? 'never (a node not read yet)' : `${interval.oldestReadingSeconds.toFixed(1)} s`}`,
    `BMC req/s ${interval.bmcRequestsPerSecond.toFixed(1)}`,
    `conductor CPU ${interval.conductorCpuShare.map(pct).join(', ')} of a core`,
    `RSS ${interval.conductorPeakRssMb.map((mb) => `${mb.toFixed(0)} MiB`).join(', ')}`,
    `DB statements per node read ${interval.dbQueriesPerNodeRead?.toFixed(2) ?? '?'}`,
    `postgres CPU ${pct(interval.postgresCpuShare)}, fleet ${pct(interval.fleetCpuShare)}`,
  ].join('; ');
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
};
const max = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0);

/** Whether a step met the goals: every node read in every interval, ≤ 50 % of a core and ≤ 300 MB per conductor, ≤ 1 request in flight per BMC. */
export function fleetGoalsMet(step: FleetStep): { met: boolean; failed: string[] } {
  const failed: string[] = [];
  if (step.intervals.some((i) => i.notReadShare > 0)) failed.push('a node not read within an interval');
  if (step.intervals.some((i) => i.conductorCpuShare.some((share) => share > 0.5))) failed.push('conductor CPU > 50 %');
  if (step.intervals.some((i) => i.conductorPeakRssMb.some((mb) => mb > 300))) failed.push('conductor RSS > 300 MB');
  if (step.maxInFlightPerBmc > 1) failed.push(`${step.maxInFlightPerBmc} requests in flight to one BMC`);
  return { met: failed.length === 0, failed };
}

/** The report's table: per step, the worst interval for coverage, the median for costs. */
export function renderFleetReport(report: FleetReport): string {
  const { options } = report;
  const lines = [
    `fleet: ${options.nodes} simulated Redfish BMCs (latency median ${options.latency.medianMs} ms, p99 ${options.latency.p99Ms} ms, max ${options.latency.maxMs} ms; ${pct(options.errorRate)} 5xx, ${pct(options.timeoutRate)} unanswered), ` +
      `${options.conductors} conductor(s), power sync every ${options.intervalSeconds} s with health, ${options.intervals} intervals per step`,
    `machine: ${report.machine.cpus} CPUs, shared; load ${report.machine.loadAverageBefore.map((l) => l.toFixed(2)).join(' ')} before, ${report.machine.loadAverageAfter.map((l) => l.toFixed(2)).join(' ')} after`,
    '',
    'nodes   first full  not read   oldest    BMC     conductor CPU    RSS MiB      DB stmts   in flight  goals',
    '        reading     (worst)    reading   req/s   (median, max)    (max)        per node   per BMC',
  ];
  for (const step of report.steps) {
    const cpu = step.intervals.flatMap((i) => i.conductorCpuShare);
    const goals = fleetGoalsMet(step);
    const queries = step.intervals.flatMap((i) => (i.dbQueriesPerNodeRead === null ? [] : [i.dbQueriesPerNodeRead]));
    lines.push(
      [
        String(step.nodes).padEnd(7),
        (step.firstFullReadingSeconds === null ? 'never' : `${step.firstFullReadingSeconds.toFixed(0)} s`).padEnd(11),
        pct(max(step.intervals.map((i) => i.notReadShare))).padEnd(10),
        (step.intervals.some((i) => i.oldestReadingSeconds === null)
          ? 'never'
          : `${max(step.intervals.map((i) => i.oldestReadingSeconds ?? 0)).toFixed(0)} s`
        ).padEnd(9),
        median(step.intervals.map((i) => i.bmcRequestsPerSecond))
          .toFixed(0)
          .padEnd(7),
        `${pct(median(cpu))}, ${pct(max(cpu))}`.padEnd(16),
        max(step.intervals.flatMap((i) => i.conductorPeakRssMb))
          .toFixed(0)
          .padEnd(12),
        (queries.length > 0 ? median(queries).toFixed(2) : '?').padEnd(10),
        String(step.maxInFlightPerBmc).padEnd(10),
        goals.met ? 'met' : goals.failed.join('; '),
      ].join(' '),
    );
  }
  const perNode = report.steps.map((step) => {
    const cpu = median(step.intervals.flatMap((i) => i.conductorCpuShare)) * options.intervalSeconds;
    return `${step.nodes}: ${((cpu * 1000) / (step.nodes / options.conductors)).toFixed(2)} ms CPU per node per interval`;
  });
  lines.push('', `per machine: ${perNode.join('; ')}`);
  lines.push(
    "Ironic's published figures: 300 nodes per conductor planned (800-1,000 seen), ~340 MB for an idle conductor, power sync every 120 s with 8 workers.",
  );
  for (const step of report.steps) {
    lines.push(
      `${step.nodes} nodes: answers ${Object.entries(step.answers)
        .map(([status, n]) => `${status} ×${n}`)
        .join(', ')}; sessions opened ${step.sessionsOpened}; in maintenance ${step.maintenance}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
