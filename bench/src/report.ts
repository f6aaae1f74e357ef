import type { BodyCheckResult } from './body-check.js';
import type { EnrolmentRate, EnrolmentResult } from './enrolment.js';
import type { ImageFanoutReport } from './image-fanout.js';
import type { ImageStormReport } from './image-storm.js';
import type { LoadRunRecord } from './load-runs.js';
import type { ApiScalePoint, QueryScalePoint } from './lookup-scaling.js';
import type { BenchOptions } from './options.js';
import type { ProvisioningResult } from './provisioning.js';

export interface RunRatio {
  concurrency: number;
  /**
   * Boot API req/s divided by nginx's in the same round: the median of the
   * rounds' ratios (each boot-API run is paired with the nginx run after it).
   */
  bootApiToNginx: number | null;
  bootApiToNodeStatic: number | null;
  /** Each round's ratio, in round order. */
  bootApiToNginxRounds: number[];
  bootApiToNodeStaticRounds: number[];
}

/** One server at one concurrency over every round: the medians, and the errors of all rounds. */
export interface RunSummary {
  server: string;
  concurrency: number;
  rounds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number };
  errors: number;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  machine: {
    cpus: number;
    /** 1, 5 and 15 minute load averages before the stack started and after the last run. */
    loadAverageBefore: number[];
    loadAverageAfter: number[];
    node: string;
    nginx: string | null;
    loadGenerator: string;
  };
  options: Omit<BenchOptions, 'resultsDir' | 'cpuProfileDir' | 'keep' | 'hold'>;
  /** Both enrolment paths, each with its own rate (`nodes`: the total). */
  enrolment: Omit<EnrolmentResult, 'nodes'> & { nodes: number };
  /** Null with --enrolment-only, as is everything after it. */
  provisioning: ProvisioningResult | null;
  bodyCheck: BodyCheckResult | null;
  /** Every measured run, each round's. */
  runs: LoadRunRecord[];
  /** Per server and concurrency, the medians of its rounds. */
  summaries: RunSummary[];
  ratios: RunRatio[];
  lookupScaling: {
    query: { small: QueryScalePoint; large: QueryScalePoint } | null;
    api: { small: ApiScalePoint; large: ApiScalePoint } | null;
  };
  /** Deploy kernel and ramdisk downloads, conductors against nginx; null when not run. */
  imageStorm: ImageStormReport | null;
  /** One instance image for many agents with image_download_source local; null when not run. */
  imageFanout: ImageFanoutReport | null;
  /** Parts left out, and why (e.g. nginx not installed). */
  skipped: string[];
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const levelsOf = (runs: readonly LoadRunRecord[]) => [...new Set(runs.map((r) => r.concurrency))];

export function summariesOf(runs: readonly LoadRunRecord[]): RunSummary[] {
  const summaries: RunSummary[] = [];
  for (const concurrency of levelsOf(runs)) {
    for (const server of new Set(runs.map((r) => r.server))) {
      const mine = runs.filter((r) => r.server === server && r.concurrency === concurrency);
      if (mine.length === 0) continue;
      summaries.push({
        server,
        concurrency,
        rounds: mine.length,
        requestsPerSecond: median(mine.map((r) => r.result.requestsPerSecond)),
        latencyMs: {
          p50: median(mine.map((r) => r.result.latencyMs.p50)),
          p99: median(mine.map((r) => r.result.latencyMs.p99)),
        },
        errors: mine.reduce((sum, r) => sum + r.result.errors.total, 0),
      });
    }
  }
  return summaries;
}

/**
 * `ours` ÷ `theirs` per round, each run against the other server's of its
 * own round (3 decimals, in round order, rounds where both ran), and their
 * median (null when there is none). `runs`: one concurrency or storm size.
 */
export function pairedRatios<R extends { server: string; round: number }>(
  runs: readonly R[],
  value: (run: R) => number,
  ours: string,
  theirs: string,
): { median: number | null; rounds: number[] } {
  const ratios: number[] = [];
  for (const round of [...new Set(runs.map((r) => r.round))].sort((a, b) => a - b)) {
    const of = (server: string) => runs.find((r) => r.server === server && r.round === round);
    const mine = of(ours);
    const other = of(theirs);
    if (mine !== undefined && other !== undefined && value(other)) ratios.push(round3(value(mine) / value(other)));
  }
  return { median: ratios.length ? round3(median(ratios)) : null, rounds: ratios };
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

export function ratiosOf(runs: readonly LoadRunRecord[]): RunRatio[] {
  return levelsOf(runs).map((concurrency) => {
    const level = runs.filter((r) => r.concurrency === concurrency);
    const rate = (run: LoadRunRecord) => run.result.requestsPerSecond;
    const nginx = pairedRatios(level, rate, 'boot-api', 'nginx');
    const nodeStatic = pairedRatios(level, rate, 'boot-api', 'node-static');
    return {
      concurrency,
      bootApiToNginx: nginx.median,
      bootApiToNodeStatic: nodeStatic.median,
      bootApiToNginxRounds: nginx.rounds,
      bootApiToNodeStaticRounds: nodeStatic.rounds,
    };
  });
}

/** Columns padded to their widest cell, the first left-aligned, with a rule under the header. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const fixed = (n: number, digits: number) => n.toFixed(digits);

/** One line per enrolment path: the CLI's (a request per node and per port) and bulk. */
export function renderEnrolment(enrolment: BenchReport['enrolment']): string[] {
  const lines: string[] = [];
  const { perRequest, bulk } = enrolment;
  const figure = (r: EnrolmentRate) => {
    const cpu = Object.entries(r.cpuSeconds ?? {})
      .map(([name, seconds]) => `${name} ${fixed(seconds, 1)}`)
      .join(', ');
    return `${fixed(r.nodesPerSecond, 0)} nodes/s (${r.nodes} in ${fixed(r.seconds, 1)} s${cpu ? `; CPU s: ${cpu}` : ''})`;
  };
  if (perRequest) {
    lines.push(
      `enrolment, per request (CLI path: POST /v1/nodes, POST /v1/ports; ${perRequest.concurrency} nodes at a time): ${figure(perRequest)}`,
    );
  }
  if (bulk) {
    lines.push(
      `enrolment, bulk (POST /v1/nodes/bulk, ${bulk.batchNodes} nodes a request, ${bulk.concurrency} at a time): ${figure(bulk)}`,
    );
  }
  return lines;
}

/** The human-readable report: one table of the load runs, then ratios, enrolment and lookup scaling. */
export function renderReport(report: BenchReport, conductorNames: readonly string[]): string {
  const cpuColumns = ['api', ...conductorNames, 'postgres', 'nginx', 'node-static', 'loadgen', 'bench'];
  const rssColumns = ['api', ...conductorNames];
  const short = (name: string) => name.replace('conductor-', 'c');
  const header = [
    'server',
    'conc',
    'round',
    'req/s',
    'p50 ms',
    'p99 ms',
    'errors',
    ...cpuColumns.map((c) => `cpu ${short(c)}`),
    ...rssColumns.map((c) => `rss ${short(c)}`),
  ];
  const rows = report.runs.map((run) => [
    run.server,
    String(run.concurrency),
    String(run.round),
    String(Math.round(run.result.requestsPerSecond)),
    fixed(run.result.latencyMs.p50, 2),
    fixed(run.result.latencyMs.p99, 2),
    String(run.result.errors.total),
    ...cpuColumns.map((c) => {
      const use = run.resources[c];
      return use ? fixed(use.cpuSeconds, 1) : '-';
    }),
    ...rssColumns.map((c) => {
      const use = run.resources[c];
      return use ? fixed(use.peakRssMb, 0) : '-';
    }),
  ]);
  const lines: string[] = [];
  const m = report.machine;
  lines.push(
    `boot-storm benchmark: ${report.enrolment.nodes} nodes, ${report.options.rounds} round(s) of ${report.options.durationSeconds} s runs, ` +
      `${m.loadGenerator}, ${m.cpus} CPUs, load average ${m.loadAverageBefore.map((l) => l.toFixed(2)).join(' ')} ` +
      `before, ${m.loadAverageAfter.map((l) => l.toFixed(2)).join(' ')} after`,
    '',
  );
  if (report.runs.length > 0) {
    lines.push(
      table(header, rows),
      "(cpu: CPU seconds each process used during the run, bench = this process, reading the stack's logs; rss: peak resident memory, MiB)",
      '',
    );
  }
  if (report.summaries.length > 0) {
    lines.push(
      `medians of ${report.options.rounds} round(s):`,
      table(
        ['server', 'conc', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
        report.summaries.map((s) => [
          s.server,
          String(s.concurrency),
          String(Math.round(s.requestsPerSecond)),
          fixed(s.latencyMs.p50, 2),
          fixed(s.latencyMs.p99, 2),
          String(s.errors),
        ]),
      ),
      '(errors: all rounds together)',
      '',
    );
  }
  const ratioText = (value: number | null, rounds: number[]) =>
    value === null
      ? 'n/a'
      : `${fixed(value, 3)}${rounds.length > 1 ? ` (rounds ${rounds.map((r) => fixed(r, 3)).join(' ')})` : ''}`;
  for (const ratio of report.ratios) {
    lines.push(
      `c=${ratio.concurrency}: boot-API / nginx = ${ratioText(ratio.bootApiToNginx, ratio.bootApiToNginxRounds)}, ` +
        `boot-API / node-static = ${ratioText(ratio.bootApiToNodeStatic, ratio.bootApiToNodeStaticRounds)}`,
    );
  }
  lines.push('', ...renderEnrolment(report.enrolment));
  if (report.provisioning) {
    lines.push(
      `provisioning to wait call-back: ${report.provisioning.steps.map((s) => `${s.target} ${fixed(s.seconds, 1)} s`).join(', ')}`,
    );
  }
  if (report.bodyCheck) {
    lines.push(`body check: ${report.bodyCheck.checked} nodes, ${report.bodyCheck.failures.length} failures`);
  }
  const { query, api } = report.lookupScaling;
  if (query) {
    lines.push(
      `lookup query (one at a time): ${query.small.nodes} nodes p50 ${query.small.latency.p50Ms} ms p99 ${query.small.latency.p99Ms} ms; ` +
        `${query.large.nodes} nodes p50 ${query.large.latency.p50Ms} ms p99 ${query.large.latency.p99Ms} ms`,
      `  plan: ${query.large.plan}`,
    );
  }
  if (api) {
    const point = (p: ApiScalePoint) =>
      `${p.nodes} nodes p50 ${fixed(p.load.latencyMs.p50, 2)} ms p99 ${fixed(p.load.latencyMs.p99, 2)} ms`;
    lines.push(`/v1/boot at c=1: ${point(api.small)}; ${point(api.large)}`);
  }
  for (const reason of report.skipped) lines.push(`skipped: ${reason}`);
  for (const failure of report.bodyCheck?.failures.slice(0, 10) ?? []) lines.push(`body check failed: ${failure}`);
  return `${lines.join('\n')}\n`;
}
