import type { BodyCheckResult } from './body-check.js';
import type { EnrolmentRate, EnrolmentResult } from './enrolment.js';
import type { ImageStormReport } from './image-storm.js';
import type { LoadRunRecord } from './load-runs.js';
import type { ApiScalePoint, QueryScalePoint } from './lookup-scaling.js';
import type { BenchOptions } from './options.js';
import type { ProvisioningResult } from './provisioning.js';

export interface RunRatio {
  concurrency: number;
  /** Boot API req/s divided by nginx's, measured in the same run. */
  bootApiToNginx: number | null;
  bootApiToNodeStatic: number | null;
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
  runs: LoadRunRecord[];
  ratios: RunRatio[];
  lookupScaling: {
    query: { small: QueryScalePoint; large: QueryScalePoint } | null;
    api: { small: ApiScalePoint; large: ApiScalePoint } | null;
  };
  /** Deploy kernel and ramdisk downloads, conductors against nginx; null when not run. */
  imageStorm: ImageStormReport | null;
  /** Parts left out, and why (e.g. nginx not installed). */
  skipped: string[];
}

export function ratiosOf(runs: readonly LoadRunRecord[]): RunRatio[] {
  const levels = [...new Set(runs.map((r) => r.concurrency))];
  return levels.map((concurrency) => {
    const rate = (server: string) =>
      runs.find((r) => r.server === server && r.concurrency === concurrency)?.result.requestsPerSecond;
    const api = rate('boot-api');
    const ratio = (other: number | undefined) =>
      api !== undefined && other ? Math.round((api / other) * 1000) / 1000 : null;
    return { concurrency, bootApiToNginx: ratio(rate('nginx')), bootApiToNodeStatic: ratio(rate('node-static')) };
  });
}

function table(header: string[], rows: string[][]): string {
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
    `boot-storm benchmark: ${report.enrolment.nodes} nodes, ${report.options.durationSeconds} s runs, ` +
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
  for (const ratio of report.ratios) {
    const nginx = ratio.bootApiToNginx === null ? 'n/a' : fixed(ratio.bootApiToNginx, 3);
    const nodeStatic = ratio.bootApiToNodeStatic === null ? 'n/a' : fixed(ratio.bootApiToNodeStatic, 3);
    lines.push(`c=${ratio.concurrency}: boot-API / nginx = ${nginx}, boot-API / node-static = ${nodeStatic}`);
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
