import type { LoadGenerator, LoadResult } from './load-generator.js';
import { ResourceMonitor, type ResourceUse } from './process-stats.js';

export interface ServerUnderTest {
  /** `boot-api`, `nginx`, `node-static`. */
  name: string;
  baseUrl: string;
}

export interface LoadRunRecord {
  server: string;
  concurrency: number;
  result: LoadResult;
  /** Per process group (api, conductor-1, postgres, nginx, loadgen, …): CPU seconds and peak RSS during the run. */
  resources: Record<string, ResourceUse>;
}

export interface LoadMatrixOptions {
  servers: readonly ServerUnderTest[];
  concurrency: readonly number[];
  macs: readonly string[];
  durationSeconds: number;
  warmupSeconds: number;
  generator: LoadGenerator;
  /** Processes to watch, by name; `loadgen` is added (the generator's own PID). */
  processGroups: ReadonlyMap<string, () => number[]>;
  progress: (line: string) => void;
  /** Called as each measured run starts and ends (e.g. to toggle CPU profilers). */
  onMeasuredRun?: (server: string, concurrency: number, phase: 'start' | 'end') => void;
}

/**
 * Every server at every concurrency, one after the other, each with an
 * unrecorded warm-up first; CPU and memory of every watched process are
 * sampled during the measured run only.
 */
export async function runLoadMatrix(options: LoadMatrixOptions): Promise<LoadRunRecord[]> {
  const records: LoadRunRecord[] = [];
  for (const concurrency of options.concurrency) {
    for (const server of options.servers) {
      const target = { baseUrl: server.baseUrl, macs: options.macs, concurrency };
      if (options.warmupSeconds > 0) {
        await options.generator.run({ ...target, durationSeconds: options.warmupSeconds });
      }
      let generatorPid: number | undefined;
      const groups = new Map(options.processGroups);
      groups.set('loadgen', () => (generatorPid ? [generatorPid] : []));
      const monitor = new ResourceMonitor(groups);
      monitor.start();
      options.onMeasuredRun?.(server.name, concurrency, 'start');
      let result: LoadResult;
      let resources: Map<string, ResourceUse>;
      try {
        result = await options.generator.run({ ...target, durationSeconds: options.durationSeconds }, (pid) => {
          generatorPid = pid;
        });
      } finally {
        resources = monitor.stop();
        options.onMeasuredRun?.(server.name, concurrency, 'end');
      }
      records.push({ server: server.name, concurrency, result, resources: Object.fromEntries(resources) });
      options.progress(
        `${server.name} c=${concurrency}: ${Math.round(result.requestsPerSecond)} req/s, ` +
          `p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms, ${result.errors.total} errors`,
      );
    }
  }
  return records;
}
