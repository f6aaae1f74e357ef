#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ApiClient } from '@bmaas/api-client';
import { freePort, pluginSection, UsageError } from '@bmaas/common';
import { openDatabase } from '@bmaas/db';
import { loadSendfile } from '@bmaas/sendfile';
import type { Stack } from '@bmaas/stack';
import { startStack } from './bench-stack.js';
import { checkBootBodies } from './body-check.js';
import { enrolNodes } from './enrolment.js';
import {
  type FleetBenchOptions,
  type FleetReport,
  fleetGoalsMet,
  measureFleet,
  renderFleetReport,
  startFleetProcesses,
} from './fleet.js';
import { imageFanoutFailed, renderImageFanout, runImageFanout } from './image-fanout.js';
import {
  type ImageStormContext,
  imageStormFailed,
  renderImageStorm,
  runImageStorm,
  stormOwners,
} from './image-storm.js';
import { chooseLoadGenerator, type LoadGenerator } from './load-generator.js';
import { runLoadMatrix, type ServerUnderTest } from './load-runs.js';
import { measureApiLookupScaling, measureLookupQueryScaling } from './lookup-scaling.js';
import { sample, toHyphens } from './macs.js';
import { findNginx, nginxVersion, startNginx, unprivilegedUser } from './nginx.js';
import { BENCH_USAGE, type BenchOptions, parseBenchOptions } from './options.js';
import { ProcessTable, ResourceMonitor } from './process-stats.js';
import { provisionNodes } from './provisioning.js';
import { type BenchReport, ratiosOf, renderEnrolment, renderReport, summariesOf } from './report.js';
import type { ServedProcess } from './served-process.js';
import { startStaticFileServer } from './static-file-server.js';
import { renderWrkScript } from './wrk-script.js';

const DEFAULT_RESULTS_DIR = fileURLToPath(new URL('../results', import.meta.url));

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

/** Kernel and ramdisk for driver_info: small local files, hard-linked into http roots at deploy. */
function writeDeployImages(workDir: string): { kernel: string; ramdisk: string } {
  const dir = join(workDir, 'images');
  mkdirSync(dir, { recursive: true });
  const kernel = join(dir, 'vmlinuz');
  const ramdisk = join(dir, 'initrd.img');
  writeFileSync(kernel, randomBytes(4096));
  writeFileSync(ramdisk, randomBytes(8192));
  return { kernel: pathToFileURL(kernel).href, ramdisk: pathToFileURL(ramdisk).href };
}

/** Everything the bench started, stopped in reverse order; safe to call twice. */
class Cleanup {
  private readonly steps: Array<() => Promise<void>> = [];
  private running: Promise<void> | undefined;

  add(step: () => Promise<void>): void {
    this.steps.push(step);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        await step().catch((error: Error) => log(`cleanup: ${error.message}`));
      }
    })();
    return this.running;
  }
}

async function runBench(options: BenchOptions, cleanup: Cleanup): Promise<BenchReport> {
  const startedAt = new Date();
  const loadAverageBefore = os.loadavg();
  const workDir = mkdtempSync(join(os.tmpdir(), 'bmaas-bench-'));
  // The embedded PostgreSQL (run as the postgres user under root) and nginx's workers must reach it.
  chmodSync(workDir, 0o755);
  if (!options.keep) cleanup.add(async () => rmSync(workDir, { recursive: true, force: true }));
  else log(`keeping ${workDir}`);
  const generator = chooseLoadGenerator(options.loadGenerator, workDir, log);
  const skipped: string[] = [];

  log(
    `starting PostgreSQL, the API and ${options.conductors} conductors in ${workDir}` +
      `${options.jsonRpcTls ? ' (JSON-RPC over TLS)' : ''}…`,
  );
  if (options.cpuProfileDir) mkdirSync(options.cpuProfileDir, { recursive: true });
  const stack = await startStack(options, workDir);
  cleanup.add(() => stack.stop());
  try {
    return await measure(options, { workDir, stack, generator, skipped, startedAt, loadAverageBefore }, cleanup);
  } catch (error) {
    log(`failed; the last lines of the stack's output:\n${stack.recentOutput(10)}`);
    throw error;
  }
}

interface Started {
  workDir: string;
  stack: Stack;
  generator: LoadGenerator;
  skipped: string[];
  startedAt: Date;
  loadAverageBefore: number[];
}

async function measure(options: BenchOptions, started: Started, cleanup: Cleanup): Promise<BenchReport> {
  const { workDir, stack, generator, skipped } = started;
  const api = new ApiClient(stack.apiUrl, { version: 'latest' });
  cleanup.add(async () => api.close());

  const enrolmentProcesses = new ProcessTable();
  const enrolmentGroups = new Map<string, () => number[]>([
    ['api', () => [stack.pidOf('api') ?? -1]],
    ['postgres', () => enrolmentProcesses.withChildren(stack.postmasterPid)],
    ['bench', () => [process.pid]],
  ]);
  log(
    `enrolling ${options.nodes} nodes (node + port): ${options.perRequestNodes} per request, ${options.clientConcurrency} at a time, ` +
      `then ${options.nodes - options.perRequestNodes} through POST /v1/nodes/bulk, ${options.bulkBatchNodes} a request, ${options.bulkConcurrency} at a time…`,
  );
  const enrolment = await enrolNodes(api, options.nodes, {
    perRequestNodes: options.perRequestNodes,
    concurrency: options.clientConcurrency,
    bulkBatchNodes: options.bulkBatchNodes,
    bulkConcurrency: options.bulkConcurrency,
    images: writeDeployImages(workDir),
    progress: log,
    measure: () => {
      // With --cpu-prof, the API profiles each path (api-<pid>-1: per request, -2: bulk).
      const api = stack.pidOf('api');
      if (options.cpuProfileDir && api) process.kill(api, 'SIGUSR2');
      const monitor = new ResourceMonitor(enrolmentGroups);
      monitor.start();
      return () => {
        if (options.cpuProfileDir && api) process.kill(api, 'SIGUSR2');
        return Object.fromEntries([...monitor.stop()].map(([group, use]) => [group, use.cpuSeconds]));
      };
    },
  });
  const enrolmentReport = { nodes: enrolment.nodes.length, perRequest: enrolment.perRequest, bulk: enrolment.bulk };
  for (const line of renderEnrolment(enrolmentReport)) log(line);
  if (options.enrolmentOnly) {
    return {
      ...reportHead(options, started, os.loadavg(), null),
      enrolment: enrolmentReport,
      provisioning: null,
      bodyCheck: null,
      runs: [],
      summaries: [],
      ratios: [],
      lookupScaling: { query: null, api: null },
      imageStorm: null,
      imageFanout: null,
      skipped: [...skipped, 'everything after enrolment (--enrolment-only)'],
    };
  }

  const stackPids = () => ['api', ...stack.conductors.map((c) => c.name)].flatMap((name) => stack.pidOf(name) ?? []);
  const provisioningProcesses = new ProcessTable();
  const provisioningGroups = new Map<string, () => number[]>([
    ['api', () => [stack.pidOf('api') ?? -1]],
    ['conductors', () => stack.conductors.flatMap((c) => stack.pidOf(c.name) ?? [])],
    ['postgres', () => provisioningProcesses.withChildren(stack.postmasterPid)],
    ['bench', () => [process.pid]],
  ]);
  log('manage → provide → deploy, until every node waits in "wait call-back"…');
  const provisioning = await provisionNodes(
    api,
    enrolment.nodes.map((n) => n.uuid),
    {
      concurrency: options.clientConcurrency,
      stepTimeoutMs: Math.max(120_000, options.nodes * 50),
      progress: log,
      measure: (target) => {
        // With --cpu-prof, the API and the conductors profile the deploy step (<name>-<pid>-1.cpuprofile).
        const profiled = target === 'active' && options.cpuProfileDir ? stackPids() : [];
        for (const pid of profiled) process.kill(pid, 'SIGUSR2');
        const monitor = new ResourceMonitor(provisioningGroups);
        monitor.start();
        return () => {
          for (const pid of profiled) process.kill(pid, 'SIGUSR2');
          return Object.fromEntries([...monitor.stop()].map(([group, use]) => [group, use.cpuSeconds]));
        };
      },
    },
  );

  log(
    `provisioning: ${provisioning.steps
      .map((s) => `${s.target} ${s.seconds.toFixed(1)} s (${Math.round(options.nodes / s.seconds)} nodes/s)`)
      .join(', ')}`,
  );
  for (const step of provisioning.steps) {
    if (!step.cpuSeconds) continue;
    const perNode = (seconds: number) => `${((seconds * 1000) / options.nodes).toFixed(2)} ms`;
    const total = Object.values(step.cpuSeconds).reduce((sum, seconds) => sum + seconds, 0);
    log(
      `provisioning CPU per node, ${step.target}: ${Object.entries(step.cpuSeconds)
        .map(([group, seconds]) => `${group} ${perNode(seconds)}`)
        .join(', ')}; together ${perNode(total)}`,
    );
  }

  // Provisioning rewrote every node row several times: let PostgreSQL settle (autovacuum would
  // otherwise do this during the load runs, on the boot API's account).
  await settleDatabase(stack.databaseUrl);

  const roots = stack.conductors.map((c) => c.httpRoot);
  const pxeConfigSubdir = pluginSection<{ pxe_config_subdir: { default: string } }>(
    stack.config,
    'pxe',
  ).pxe_config_subdir;
  const servers: ServerUnderTest[] = [{ name: 'boot-api', baseUrl: stack.apiUrl }];
  const served = new Map<string, ServedProcess>();
  const nginxBinary = findNginx();
  if (nginxBinary) {
    const nginx = await startNginx(nginxBinary, {
      port: await freePort(),
      roots,
      pxeConfigSubdir,
      prefixDir: join(workDir, 'nginx'),
      user: unprivilegedUser(),
    });
    cleanup.add(() => nginx.stop());
    served.set('nginx', nginx);
    servers.push({ name: 'nginx', baseUrl: nginx.baseUrl });
  } else {
    skipped.push('nginx: not installed (apt-get install nginx-light)');
  }
  const nodeStatic = await startStaticFileServer(await freePort(), { roots, pxeConfigSubdir });
  cleanup.add(() => nodeStatic.stop());
  served.set('node-static', nodeStatic);
  servers.push({ name: 'node-static', baseUrl: nodeStatic.baseUrl });

  log(`checking the bodies of ${options.sampleSize} random nodes on every server…`);
  const bodyCheck = await checkBootBodies({
    api,
    sample: sample(enrolment.nodes, options.sampleSize),
    httpUrlOf: new Map(stack.conductors.map((c) => [c.hostname, c.httpUrl])),
    staticServers: servers.filter((s) => s.name !== 'boot-api'),
  });
  if (bodyCheck.failures.length > 0) log(`body check: ${bodyCheck.failures.length} failures`);

  const processGroups = new Map<string, () => number[]>();
  for (const name of ['api', ...stack.conductors.map((c) => c.name)]) {
    processGroups.set(name, () => {
      const pid = stack.pidOf(name);
      return pid ? [pid] : [];
    });
  }
  const processes = new ProcessTable();
  processGroups.set('postgres', () => processes.withChildren(stack.postmasterPid));
  for (const [name, server] of served) processGroups.set(name, () => [server.pid, ...processes.childrenOf(server.pid)]);
  // This process reads every log line of the stack: its CPU is part of the API's logging cost.
  processGroups.set('bench', () => [process.pid]);

  const macs = enrolment.nodes.map((n) => n.mac);
  if (options.hold) await holdUntilInterrupted(workDir, servers, processGroups, macs);
  if (!options.imageStormOnly)
    log(
      `load: ${servers.map((s) => s.name).join(', ')} at c=${options.concurrency.join(', ')}, ` +
        `${options.rounds} round(s) of ${options.durationSeconds} s each…`,
    );
  const runs = options.imageStormOnly
    ? []
    : await runLoadMatrix({
        servers,
        concurrency: options.concurrency,
        macs,
        durationSeconds: options.durationSeconds,
        warmupSeconds: options.warmupSeconds,
        rounds: options.rounds,
        generator,
        processGroups,
        progress: log,
        onMeasuredRun: (server) => {
          // Each SIGUSR2 starts or ends a CPU profile (see cpu-profile-preload.ts).
          if (!options.cpuProfileDir || server !== 'boot-api') return;
          for (const name of ['api', ...stack.conductors.map((c) => c.name)]) {
            const pid = stack.pidOf(name);
            if (pid) process.kill(pid, 'SIGUSR2');
          }
        },
      });
  const loadAverageAfter = os.loadavg();

  let querySpan: BenchReport['lookupScaling']['query'] = null;
  let apiSpan: BenchReport['lookupScaling']['api'] = null;
  if (options.lookupNodes > 0 && !options.imageStormOnly) {
    log(`lookup scaling: the MAC lookup query with 1,000 and ${options.lookupNodes} nodes…`);
    querySpan = await measureLookupQueryScaling(stack.databaseUrl, options.lookupNodes, 3000);
    log(`lookup scaling: /v1/boot at c=1 with ${options.nodes} and ${options.lookupNodes} nodes…`);
    apiSpan = await measureApiLookupScaling({
      databaseUrl: stack.databaseUrl,
      apiUrl: stack.apiUrl,
      enrolledMacs: macs,
      largeNodes: options.lookupNodes,
      durationSeconds: Math.min(5, options.durationSeconds),
      generator,
    });
  }

  const owners = stormOwners(stack.conductors, (name) => stack.pidOf(name));
  const stormContext: ImageStormContext = {
    workDir,
    nodes: enrolment.nodes,
    ownerOf: async (node) => {
      const { conductor } = (
        await api.expect<{ conductor: string | null }>(200, 'GET', `/v1/nodes/${node.uuid}?fields=conductor`)
      ).body;
      const owner = conductor ? owners.get(conductor) : undefined;
      if (!owner) throw new Error(`node ${node.uuid}: owner ${conductor} is not a conductor of this stack`);
      return owner;
    },
    owners: [...owners.values()],
    nginxBinary,
    nginxUser: unprivilegedUser(),
    processes,
    progress: log,
    onCleanup: (step) => cleanup.add(step),
    profileConductors: options.cpuProfileDir !== undefined,
  };
  let imageStorm: BenchReport['imageStorm'] = null;
  if (options.stormMachines.length > 0) {
    log(`image storm: ${options.stormMachines.join(', ')} machines, conductors then nginx…`);
    imageStorm = await runImageStorm(
      {
        machines: options.stormMachines,
        kernelBytes: options.stormKernelMib * 1024 * 1024,
        ramdiskBytes: options.stormRamdiskMib * 1024 * 1024,
        clients: options.stormClients,
        rounds: options.rounds,
        conductorsSend: conductorsSend(options),
      },
      stormContext,
    );
  }
  let imageFanout: BenchReport['imageFanout'] = null;
  if (options.fanoutAgents.length > 0) {
    log(`image fan-out: ${options.fanoutAgents.join(', ')} agents, one upstream download, conductors then nginx…`);
    imageFanout = await runImageFanout(
      {
        agents: options.fanoutAgents,
        imageBytes: options.fanoutImageMib * 1024 * 1024,
        clients: options.stormClients,
        rounds: options.rounds,
      },
      stormContext,
    );
  }

  return {
    ...reportHead(options, started, loadAverageAfter, nginxBinary),
    enrolment: enrolmentReport,
    provisioning,
    bodyCheck,
    runs,
    summaries: summariesOf(runs),
    ratios: ratiosOf(runs),
    lookupScaling: { query: querySpan, api: apiSpan },
    imageStorm,
    imageFanout,
    skipped,
  };
}

/** The report's run, machine and options. */
function reportHead(
  options: BenchOptions,
  started: Started,
  loadAverageAfter: number[],
  nginxBinary: string | undefined | null,
): Pick<BenchReport, 'startedAt' | 'finishedAt' | 'machine' | 'options'> {
  const { resultsDir: _r, cpuProfileDir: _c, keep: _k, hold: _h, ...reported } = options;
  return {
    startedAt: started.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      loadAverageBefore: started.loadAverageBefore,
      loadAverageAfter,
      node: process.version,
      nginx: nginxBinary ? (nginxVersion(nginxBinary) ?? 'unknown') : null,
      loadGenerator: `${started.generator.name} ${started.generator.version}`,
    },
    options: reported,
  };
}

async function settleDatabase(url: string): Promise<void> {
  const db = openDatabase({ connection: url, applicationName: 'bmaas-bench', maxPoolSize: 1 });
  try {
    await db.raw('vacuum (analyze) nodes, ports');
  } finally {
    await db.destroy();
  }
}

/** --hold: everything stays up for manual measurements until Ctrl-C (which runs the cleanup). */
async function holdUntilInterrupted(
  workDir: string,
  servers: readonly ServerUnderTest[],
  processGroups: ReadonlyMap<string, () => number[]>,
  macs: readonly string[],
): Promise<never> {
  const macList = join(workDir, 'macs.txt');
  writeFileSync(macList, `${macs.map(toHyphens).join('\n')}\n`);
  const script = join(workDir, 'boot.lua');
  writeFileSync(script, renderWrkScript(macList));
  for (const server of servers) log(`${server.name}: ${server.baseUrl}`);
  for (const [name, pids] of processGroups) log(`${name}: pid ${pids().join(' ')}`);
  log(`wrk script (random enrolled MAC per request): ${script}`);
  log('holding; Ctrl-C stops everything');
  return new Promise<never>(() => {});
}

/** --fleet: one stack, the BMC fleet process, the steps of fleet.ts. */
async function runFleetBench(
  options: FleetBenchOptions,
  cpuProfileDir: string | undefined,
  cleanup: Cleanup,
): Promise<FleetReport> {
  const startedAt = new Date();
  const loadAverageBefore = os.loadavg();
  const workDir = mkdtempSync(join(os.tmpdir(), 'bmaas-bench-fleet-'));
  chmodSync(workDir, 0o755);
  cleanup.add(async () => rmSync(workDir, { recursive: true, force: true }));
  if (cpuProfileDir) mkdirSync(cpuProfileDir, { recursive: true });
  log(`starting the BMC fleet (${options.nodes} BMCs)…`);
  const fleet = await startFleetProcesses(options, '127.1.0.1');
  cleanup.add(() => fleet.stop());
  log(`starting PostgreSQL, the API and ${options.conductors} conductor(s) in ${workDir}…`);
  const stack = await startStack(
    { conductors: options.conductors, noSendfile: false, cpuProfileDir, jsonRpcTls: false },
    workDir,
    [
      '[DEFAULT]',
      'enabled_hardware_types = fake-hardware,redfish',
      'enabled_power_interfaces = fake,redfish',
      'enabled_management_interfaces = fake,redfish',
      'enabled_inspect_interfaces = no-inspect,fake,redfish',
      'enabled_bios_interfaces = no-bios,fake,redfish',
      'enabled_firmware_interfaces = no-firmware,fake,redfish',
      '[conductor]',
      `sync_power_state_interval = ${options.intervalSeconds}`,
      '[redfish]',
      // A request the BMC never answers is tried again within the interval (the default, 60 s, is the interval).
      'request_timeout = 10',
    ],
  );
  cleanup.add(() => stack.stop());
  const api = new ApiClient(stack.apiUrl, { version: 'latest' });
  cleanup.add(async () => api.close());
  if (options.conductors > 1) {
    // A conductor's hash ring sees the others within [DEFAULT]hash_ring_reset_interval: until
    // then two conductors may both take a node for theirs (and both read its BMC).
    const seconds = stack.config.DEFAULT.hash_ring_reset_interval;
    log(`waiting ${seconds} s for the conductors' hash rings to see each other…`);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  }
  const processes = new ProcessTable();
  const steps = await measureFleet(options, {
    api,
    stack,
    fleet,
    postgresPids: () => processes.withChildren(stack.postmasterPid),
    progress: log,
    // With --cpu-prof, the conductors profile the last interval of each step (conductor-<pid>-<n>.cpuprofile).
    onLastInterval: cpuProfileDir
      ? () => {
          for (const c of stack.conductors) {
            const pid = stack.pidOf(c.name);
            if (pid) process.kill(pid, 'SIGUSR2');
          }
        }
      : undefined,
  });
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, loadAverageBefore, loadAverageAfter: os.loadavg(), node: process.version },
    options,
    steps,
  };
}

async function main(argv: string[]): Promise<number> {
  const options = parseBenchOptions(argv, DEFAULT_RESULTS_DIR);
  if (options === 'help') {
    process.stdout.write(`${BENCH_USAGE}\n`);
    return 0;
  }
  const cleanup = new Cleanup();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping everything the bench started…`);
      void cleanup.run().then(() => process.exit(130));
    });
  }
  if (options.fleet) {
    try {
      const report = await runFleetBench(options.fleet, options.cpuProfileDir, cleanup);
      process.stdout.write(`\n${renderFleetReport(report)}`);
      mkdirSync(options.resultsDir, { recursive: true });
      const file = join(
        options.resultsDir,
        `fleet-${report.startedAt.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z')}.json`,
      );
      writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
      log(`written ${file}`);
      return report.steps.every((step) => fleetGoalsMet(step).met) ? 0 : 1;
    } finally {
      await cleanup.run();
    }
  }
  try {
    const report = await runBench(options, cleanup);
    const conductorNames = Array.from({ length: options.conductors }, (_, i) => `conductor-${i + 1}`);
    process.stdout.write(`\n${renderReport(report, conductorNames)}`);
    if (report.imageStorm) process.stdout.write(`\n${renderImageStorm(report.imageStorm)}`);
    if (report.imageFanout) process.stdout.write(`\n${renderImageFanout(report.imageFanout)}`);
    mkdirSync(options.resultsDir, { recursive: true });
    const file = join(options.resultsDir, `${report.startedAt.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z')}.json`);
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    log(`written ${file}`);
    const stormFailed =
      (report.imageStorm !== null && imageStormFailed(report.imageStorm)) ||
      (report.imageFanout !== null && imageFanoutFailed(report.imageFanout));
    return (report.bodyCheck?.failures.length ?? 0) > 0 || stormFailed ? 1 : 0;
  } finally {
    await cleanup.run();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof UsageError ? error.message : ((error as Error).stack ?? String(error));
    process.stderr.write(`bench: ${message}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);

/** How the conductors' file servers send bodies in this run (they load the module this process finds). */
function conductorsSend(options: BenchOptions): string {
  if (options.noSendfile) return 'copying every chunk (--no-sendfile)';
  const { reason } = loadSendfile();
  return reason ? `copying every chunk (${reason})` : 'sendfile(2)';
}
