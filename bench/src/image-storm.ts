import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@bmaas/common';
import type { ConductorEndpoint } from '@bmaas/stack';
import type { EnrolledNode } from './enrolment.js';
import type { StormClientResult, StormMachine } from './image-storm-client.js';
import { renderNginxMain, runNginx } from './nginx.js';
import type { ProcessTable } from './process-stats.js';
import { ResourceMonitor } from './process-stats.js';
import { checkRanges, type RangeCase } from './range-check.js';
import { pairedRatios, table } from './report.js';
import type { ServedProcess } from './served-process.js';

/**
 * The image storm: N machines at once each download their deploy kernel
 * and ramdisk (`/<uuid>/deploy_kernel`, `/<uuid>/deploy_ramdisk`, as their
 * iPXE script names them) from their owning conductor's file server, then
 * the same from nginx serving the same http roots, in the same run.
 */

const CLIENT = fileURLToPath(new URL('./image-storm-client.js', import.meta.url));
/** A machine that receives no byte for this long counts as an error. */
const STALL_TIMEOUT_MS = 60_000;

export interface ImageStormOptions {
  /** Machines per storm, one storm per value and server. */
  machines: readonly number[];
  kernelBytes: number;
  ramdiskBytes: number;
  /** Load generator processes the machines are dealt over. */
  clients: number;
  /** Rounds at each machine count; each runs the conductors' storm, then nginx's. */
  rounds: number;
  /** How the conductors' file servers send bodies: "sendfile(2)", or copying and why. */
  conductorsSend: string;
}

export interface StormOwner {
  /** [deploy]http_root and the file server's address of one conductor. */
  httpRoot: string;
  host: string;
  port: number;
  /** The conductor's process, for its CPU. */
  pid: () => number | undefined;
}

/** Each conductor (by hostname) as an image server: its root, its file server's address (from http_url), its PID. */
export function stormOwners(
  conductors: readonly ConductorEndpoint[],
  pidOf: (name: string) => number | undefined,
): Map<string, StormOwner> {
  return new Map(
    conductors.map((c) => {
      const url = new URL(c.httpUrl);
      return [
        c.hostname,
        { httpRoot: c.httpRoot, host: url.hostname, port: Number(url.port), pid: () => pidOf(c.name) },
      ];
    }),
  );
}

export interface ImageStormRun {
  server: 'conductors' | 'nginx';
  machines: number;
  /** 1 to `rounds`. */
  round: number;
  bytes: number;
  seconds: number;
  gigabytesPerSecond: number;
  ttfbMs: { p50: number; p99: number; max: number };
  errors: number;
  firstErrors: string[];
  /** CPU seconds of the serving processes (all conductors, or nginx's master and workers) and of the load generator. */
  serverCpuSeconds: number;
  serverCpuSecondsPerGigabyte: number;
  loadgenCpuSeconds: number;
  /** Average bytes per socket read in the load generator (small reads cost it more CPU per GB). */
  bytesPerRead: number;
}

export interface ImageStormReport {
  kernelBytes: number;
  ramdiskBytes: number;
  clients: number;
  conductorsSend: string;
  nginxWorkers: number | null;
  runs: ImageStormRun[];
  /**
   * conductors GB/s ÷ nginx GB/s per machine count: the median of the
   * rounds' ratios (each conductors' storm against nginx's right after it),
   * and each round's.
   */
  ratios: Array<{ machines: number; conductorsToNginx: number | null; rounds: number[] }>;
  rangeChecks: Array<{ server: string; cases: RangeCase[] }>;
}

/** A file of `size` bytes of random-looking data (a 1 MiB random block repeated), written at run time. */
export function writeImageFile(path: string, size: number): void {
  const block = randomBytes(1024 * 1024);
  const fd = openSync(path, 'w');
  try {
    for (let written = 0; written < size; ) {
      written += writeSync(fd, block, 0, Math.min(block.length, size - written));
    }
  } finally {
    closeSync(fd);
  }
}

/** Hard link `source` to `dest` through a temporary name and a rename, as the conductor places images. */
function linkAtomically(source: string, dest: string): void {
  const temp = `${dest}.storm-${process.pid}`;
  linkSync(source, temp);
  renameSync(temp, dest);
}

export interface StormNginxSite {
  /** One server per conductor: its http root on a port of its own. */
  sites: Array<{ root: string; port: number }>;
  workers: number;
  prefixDir: string;
  user?: { name: string; group: string } | undefined;
}

/** nginx serving each http root as a static directory: sendfile, no access log, no listing. */
export function renderStormNginxConfig(site: StormNginxSite): string {
  return renderNginxMain({
    purpose: 'image-storm',
    workers: site.workers,
    prefixDir: site.prefixDir,
    user: site.user,
    http: ['default_type application/octet-stream;'],
    servers: site.sites.map((s) => `  server {\n    listen 127.0.0.1:${s.port};\n    root ${s.root};\n  }`).join('\n'),
  });
}

export async function startStormNginx(binary: string, site: StormNginxSite): Promise<ServedProcess> {
  const first = site.sites[0] as { port: number };
  return runNginx(binary, site.prefixDir, renderStormNginxConfig(site), `http://127.0.0.1:${first.port}`);
}

/** The machines dealt round-robin over `clients` processes, their results summed (wall time: the longest). */
export async function runClients(
  machines: readonly StormMachine[],
  clients: number,
  started: (pid: number) => void,
): Promise<StormClientResult> {
  const shares = Array.from({ length: Math.min(clients, machines.length) }, (_, k) =>
    machines.filter((_m, i) => i % clients === k),
  );
  const results = await Promise.all(shares.map((share) => runClient(share, started)));
  return {
    requests: results.reduce((n, r) => n + r.requests, 0),
    bytes: results.reduce((n, r) => n + r.bytes, 0),
    seconds: Math.max(...results.map((r) => r.seconds)),
    ttfbMs: results.flatMap((r) => r.ttfbMs).sort((a, b) => a - b),
    errors: results.reduce((n, r) => n + r.errors, 0),
    firstErrors: results.flatMap((r) => r.firstErrors).slice(0, 5),
    reads: results.reduce((n, r) => n + r.reads, 0),
  };
}

function runClient(machines: StormMachine[], started: (pid: number) => void): Promise<StormClientResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLIENT], { stdio: ['pipe', 'pipe', 'pipe'] });
    if (child.pid) started(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`image-storm client exited with ${code}: ${stderr}`));
      else resolve(JSON.parse(stdout) as StormClientResult);
    });
    child.stdin.end(JSON.stringify({ machines, timeoutMs: STALL_TIMEOUT_MS }));
  });
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number);
const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

export async function measureStorm(
  server: ImageStormRun['server'],
  machines: StormMachine[],
  serverPids: () => number[],
  clients: number,
): Promise<Omit<ImageStormRun, 'round'>> {
  const clientPids: number[] = [];
  const monitor = new ResourceMonitor(
    new Map([
      ['server', serverPids],
      ['loadgen', () => clientPids],
    ]),
  );
  monitor.start();
  const result = await runClients(machines, clients, (pid) => {
    clientPids.push(pid);
  }).catch((error: Error) => {
    monitor.stop();
    throw error;
  });
  const resources = monitor.stop();
  const gigabytes = result.bytes / 1e9;
  const serverCpu = resources.get('server')?.cpuSeconds ?? 0;
  return {
    server,
    machines: machines.length,
    bytes: result.bytes,
    seconds: round(result.seconds, 2),
    gigabytesPerSecond: round(gigabytes / result.seconds, 3),
    ttfbMs: {
      p50: round(percentile(result.ttfbMs, 50), 2),
      p99: round(percentile(result.ttfbMs, 99), 2),
      max: round(percentile(result.ttfbMs, 100), 2),
    },
    errors: result.errors,
    firstErrors: result.firstErrors,
    serverCpuSeconds: serverCpu,
    serverCpuSecondsPerGigabyte: gigabytes > 0 ? round(serverCpu / gigabytes, 3) : 0,
    loadgenCpuSeconds: resources.get('loadgen')?.cpuSeconds ?? 0,
    bytesPerRead: result.reads > 0 ? Math.round(result.bytes / result.reads) : 0,
  };
}

export interface ImageStormContext {
  workDir: string;
  /** Enrolled, deployed nodes: machine i is node i (modulo their number). */
  nodes: readonly EnrolledNode[];
  /** A node's owner, as the API names it (its `conductor` field). */
  ownerOf: (node: EnrolledNode) => Promise<StormOwner>;
  owners: readonly StormOwner[];
  nginxBinary: string | undefined;
  nginxUser: { name: string; group: string } | undefined;
  processes: ProcessTable;
  progress: (line: string) => void;
  /** Registers a cleanup step (nginx is stopped there). */
  onCleanup: (step: () => Promise<void>) => void;
  /** Whether each conductors' storm is CPU-profiled (--cpu-prof: SIGUSR2 to the conductors at its start and end). */
  profileConductors?: boolean;
}

export async function runImageStorm(options: ImageStormOptions, context: ImageStormContext): Promise<ImageStormReport> {
  const { progress } = context;
  const imageDir = join(context.workDir, 'storm-images');
  mkdirSync(imageDir, { recursive: true });
  const kernel = join(imageDir, 'deploy_kernel');
  const ramdisk = join(imageDir, 'deploy_ramdisk');
  progress(`image storm: writing a ${options.kernelBytes}-byte kernel and a ${options.ramdiskBytes}-byte ramdisk…`);
  writeImageFile(kernel, options.kernelBytes);
  writeImageFile(ramdisk, options.ramdiskBytes);

  const count = Math.max(...options.machines);
  const owned: Array<{ node: EnrolledNode; owner: StormOwner }> = [];
  for (let i = 0; i < Math.min(count, context.nodes.length); i++) {
    const node = context.nodes[i] as EnrolledNode;
    const owner = await context.ownerOf(node);
    // The node's own images, where deploy put them (hard links of one file: one copy in the page cache).
    linkAtomically(kernel, join(owner.httpRoot, node.uuid, 'deploy_kernel'));
    linkAtomically(ramdisk, join(owner.httpRoot, node.uuid, 'deploy_ramdisk'));
    owned.push({ node, owner });
  }
  const filesOf = (uuid: string) => [
    { path: `/${uuid}/deploy_kernel`, size: options.kernelBytes },
    { path: `/${uuid}/deploy_ramdisk`, size: options.ramdiskBytes },
  ];
  const machinesFor = (n: number, portOf: (owner: StormOwner) => number): StormMachine[] =>
    Array.from({ length: n }, (_, i) => {
      const { node, owner } = owned[i % owned.length] as (typeof owned)[number];
      return { host: '127.0.0.1', port: portOf(owner), files: filesOf(node.uuid) };
    });

  let nginx: ServedProcess | undefined;
  const nginxPorts = new Map<StormOwner, number>();
  const workers = context.owners.length;
  if (context.nginxBinary) {
    for (const owner of context.owners) nginxPorts.set(owner, await freePort());
    nginx = await startStormNginx(context.nginxBinary, {
      sites: context.owners.map((o) => ({ root: o.httpRoot, port: nginxPorts.get(o) as number })),
      workers,
      prefixDir: join(context.workDir, 'nginx-storm'),
      user: context.nginxUser,
    });
    context.onCleanup(() => (nginx as ServedProcess).stop());
  }

  const first = owned[0] as (typeof owned)[number];
  const rangeChecks: ImageStormReport['rangeChecks'] = [];
  const rangeTargets: Array<[string, string]> = [
    ['conductors', `http://${first.owner.host}:${first.owner.port}/${first.node.uuid}/deploy_kernel`],
  ];
  if (nginx)
    rangeTargets.push(['nginx', `http://127.0.0.1:${nginxPorts.get(first.owner)}/${first.node.uuid}/deploy_kernel`]);
  for (const [server, url] of rangeTargets) {
    const cases = await checkRanges(url, kernel);
    const failed = cases.filter((c) => c.failures.length > 0).length;
    progress(`range checks, ${server}: ${cases.length - failed}/${cases.length} pass`);
    rangeChecks.push({ server, cases });
  }

  const conductorPids = () => context.owners.flatMap((o) => o.pid() ?? []);
  const nginxPids = () => (nginx ? [nginx.pid, ...context.processes.childrenOf(nginx.pid)] : []);
  const runs: ImageStormRun[] = [];
  for (const n of options.machines) {
    for (let round = 1; round <= options.rounds; round++) {
      const plan: Array<[ImageStormRun['server'], StormMachine[], () => number[]]> = [
        ['conductors', machinesFor(n, (o) => o.port), conductorPids],
      ];
      if (nginx) plan.push(['nginx', machinesFor(n, (o) => nginxPorts.get(o) as number), nginxPids]);
      for (const [server, machines, pids] of plan) {
        // Each SIGUSR2 starts or ends a CPU profile (see cpu-profile-preload.ts).
        const profiled = context.profileConductors === true && server === 'conductors';
        const toggleProfiles = () => {
          for (const pid of profiled ? pids() : []) process.kill(pid, 'SIGUSR2');
        };
        toggleProfiles();
        const run = await measureStorm(server, machines, pids, options.clients).finally(toggleProfiles);
        const of = options.rounds > 1 ? ` (round ${round}/${options.rounds})` : '';
        progress(
          `image storm, ${server}, ${n} machines${of}: ${run.gigabytesPerSecond} GB/s, TTFB p99 ${run.ttfbMs.p99} ms, ` +
            `${run.serverCpuSecondsPerGigabyte} CPU s/GB, ${run.errors} errors`,
        );
        runs.push({ ...run, round });
      }
    }
  }
  const ratios = stormRatios(runs, options.machines);
  return {
    kernelBytes: options.kernelBytes,
    ramdiskBytes: options.ramdiskBytes,
    clients: options.clients,
    conductorsSend: options.conductorsSend,
    nginxWorkers: nginx ? workers : null,
    runs,
    ratios,
    rangeChecks,
  };
}

/**
 * conductors GB/s ÷ nginx GB/s per machine count: each round's (the
 * conductors' storm against nginx's of the same round) and their median.
 */
export function stormRatios(
  runs: readonly Pick<ImageStormRun, 'server' | 'machines' | 'round' | 'gigabytesPerSecond'>[],
  machineCounts: readonly number[],
): ImageStormReport['ratios'] {
  return machineCounts.map((machines) => {
    const { median, rounds } = pairedRatios(
      runs.filter((r) => r.machines === machines),
      (r) => r.gigabytesPerSecond,
      'conductors',
      'nginx',
    );
    return { machines, conductorsToNginx: median, rounds };
  });
}

/** The storm's lines of the printed report. */
export function renderImageStorm(report: ImageStormReport): string {
  const header = [
    'server',
    'machines',
    'round',
    'GB/s',
    'seconds',
    'TTFB p50 ms',
    'TTFB p99 ms',
    'errors',
    'cpu s',
    'cpu s/GB',
    'loadgen cpu s',
    'KiB/read',
  ];
  const rows = report.runs.map((r) => [
    r.server,
    String(r.machines),
    String(r.round),
    r.gigabytesPerSecond.toFixed(3),
    r.seconds.toFixed(1),
    r.ttfbMs.p50.toFixed(2),
    r.ttfbMs.p99.toFixed(2),
    String(r.errors),
    r.serverCpuSeconds.toFixed(1),
    r.serverCpuSecondsPerGigabyte.toFixed(3),
    r.loadgenCpuSeconds.toFixed(1),
    (r.bytesPerRead / 1024).toFixed(0),
  ]);
  const lines = [
    `image storm: every machine GETs its deploy kernel (${report.kernelBytes} bytes) then its ramdisk ` +
      `(${report.ramdiskBytes} bytes) from its owner, all at once; conductors send by ${report.conductorsSend}; ` +
      `nginx: ${report.nginxWorkers ?? 'not run'} workers; load generator: ${report.clients} process${report.clients === 1 ? '' : 'es'}`,
    '',
    table(header, rows),
    '(cpu s: the serving processes, all conductors or nginx master + workers; loadgen: the storm client process; KiB/read: its average socket read)',
    '',
  ];
  for (const ratio of report.ratios) {
    const each = ratio.rounds.length > 1 ? ` (rounds ${ratio.rounds.map((r) => r.toFixed(3)).join(' ')})` : '';
    lines.push(
      `image storm, ${ratio.machines} machines: conductors / nginx = ${ratio.conductorsToNginx === null ? 'n/a' : ratio.conductorsToNginx.toFixed(3)}${each}`,
    );
  }
  for (const { server, cases } of report.rangeChecks) {
    const failed = cases.filter((c) => c.failures.length > 0);
    lines.push(`range checks, ${server}: ${cases.length - failed.length}/${cases.length} pass`);
    for (const c of failed) lines.push(`  FAILED ${c.name}: ${c.failures.join('; ')}`);
  }
  for (const run of report.runs)
    for (const error of run.firstErrors) lines.push(`storm error, ${run.server}: ${error}`);
  return `${lines.join('\n')}\n`;
}

/** Whether the storm found a fault: a range check failed or a download went wrong. */
export function imageStormFailed(report: ImageStormReport): boolean {
  return (
    report.runs.some((r) => r.errors > 0) || report.rangeChecks.some((r) => r.cases.some((c) => c.failures.length > 0))
  );
}
