import type { LoadGenerator, LoadResult } from './load-generator.js';
import {
  describeMachineCounters,
  type MachineCounters,
  machineCountersBetween,
  readMachineCounters,
} from './machine-counters.js';
import { ResourceMonitor, type ResourceUse } from './process-stats.js';

export interface ServerUnderTest {
  /** `boot-api`, `nginx`, `node-static`. */
  name: string;
  baseUrl: string;
}

export interface LoadRunRecord {
  server: string;
  concurrency: number;
  /** 1 to `rounds`: in each round every server runs once, in turn. */
  round: number;
  result: LoadResult;
  /** Per process group (api, conductor-1, postgres, nginx, loadgen, …): CPU seconds and peak RSS during the run. */
  resources: Record<string, ResourceUse>;
  /** The machine's TCP retransmissions and CPU steal during the run (null where /proc cannot be read). */
  machine: MachineCounters | null;
}

export interface LoadMatrixOptions {
  servers: readonly ServerUnderTest[];
  concurrency: readonly number[];
  macs: readonly string[];
  durationSeconds: number;
  warmupSeconds: number;
  /** Rounds at each concurrency; each runs every server once. */
  rounds: number;
  generator: LoadGenerator;
  /** Processes to watch, by name; `loadgen` is added (the generator's own PID). */
  processGroups: ReadonlyMap<string, () => number[]>;
  progress: (line: string) => void;
  /** Called as each measured run starts and ends (e.g. to toggle CPU profilers). */
  onMeasuredRun?: (server: string, concurrency: number, phase: 'start' | 'end') => void;
}

/**
 * Every server at every concurrency, in rounds: each round runs every
 * server once, one after the other, so that a busy minute of the machine
 * falls on all of them and not on one. Each run has an unrecorded warm-up
 * first; CPU and memory of every watched process are sampled during the
 * measured run only.
 */
export async function runLoadMatrix(options: LoadMatrixOptions): Promise<LoadRunRecord[]> {
  const records: LoadRunRecord[] = [];
  const turns = options.concurrency.flatMap((concurrency) =>
    Array.from({ length: options.rounds }, (_, index) =>
      options.servers.map((server) => ({ concurrency, round: index + 1, server })),
    ).flat(),
  );
  for (const { concurrency, round, server } of turns) {
    const target = { baseUrl: server.baseUrl, macs: options.macs, concurrency };
    if (options.warmupSeconds > 0) {
      await options.generator.run({ ...target, durationSeconds: options.warmupSeconds });
    }
    let generatorPid: number | undefined;
    const groups = new Map(options.processGroups);
    groups.set('loadgen', () => (generatorPid ? [generatorPid] : []));
    const monitor = new ResourceMonitor(groups);
    monitor.start();
    const machineBefore = await readMachineCounters();
    options.onMeasuredRun?.(server.name, concurrency, 'start');
    let result: LoadResult;
    let resources: Map<string, ResourceUse>;
    let machineAfter: MachineCounters | undefined;
    try {
      result = await options.generator.run({ ...target, durationSeconds: options.durationSeconds }, (pid) => {
        generatorPid = pid;
      });
    } finally {
      resources = monitor.stop();
      machineAfter = await readMachineCounters();
      options.onMeasuredRun?.(server.name, concurrency, 'end');
    }
    const machine = machineBefore && machineAfter ? machineCountersBetween(machineBefore, machineAfter) : null;
    records.push({
      server: server.name,
      concurrency,
      round,
      result,
      resources: Object.fromEntries(resources),
      machine,
    });
    const of = options.rounds > 1 ? ` (round ${round}/${options.rounds})` : '';
    options.progress(
      `${server.name} c=${concurrency}${of}: ${Math.round(result.requestsPerSecond)} req/s, ` +
        `p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms, ${result.errors.total} errors` +
        (machine ? `; ${describeMachineCounters(machine)}` : ''),
    );
  }
  return records;
}
