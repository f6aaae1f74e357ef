import { parseCommandLine, shareOption, UsageError, wholeNumber, wholeNumbers } from '@bmaas/common';
import type { FleetBenchOptions } from './fleet.js';

/** What `npm run bench` can be told on its command line. */
export interface BenchOptions {
  /** Nodes enrolled (one port each) and provisioned to `wait call-back`. */
  nodes: number;
  /** Seconds of each measured load run. */
  durationSeconds: number;
  /** Seconds of unrecorded load before each measured run (JIT, pools, page cache). */
  warmupSeconds: number;
  /**
   * Rounds of load runs: each round runs every server once, so the servers
   * take turns and share the machine's noise; figures are the medians.
   */
  rounds: number;
  /** Load generator connections, one run per value and server. */
  concurrency: number[];
  conductors: number;
  /** Concurrent REST requests while enrolling (per request) and provisioning. */
  clientConcurrency: number;
  /** Nodes enrolled through the per-request path (POST /v1/nodes, POST /v1/ports), the rest in bulk; default 20 % of nodes. */
  perRequestNodes: number;
  /** Nodes per POST /v1/nodes/bulk. */
  bulkBatchNodes: number;
  /** POST /v1/nodes/bulk requests in flight. */
  bulkConcurrency: number;
  /** Stop once enrolment is measured (no provisioning, servers, load or storm). */
  enrolmentOnly: boolean;
  /** Node count the lookup-scaling part grows the database to. */
  lookupNodes: number;
  /** Nodes whose bodies are checked on every server. */
  sampleSize: number;
  loadGenerator: 'auto' | 'wrk' | 'autocannon';
  /** Directory for CPU profiles of the API and conductors during the boot API's load runs; unset = none. */
  cpuProfileDir: string | undefined;
  /** Keep the state directory (database, http roots, logs) after the run. */
  keep: boolean;
  /** Stop after setting up (nodes waiting, servers up), print where everything is and wait for Ctrl-C. */
  hold: boolean;
  quick: boolean;
  /** Image storm: machines per storm (one storm per value and server); empty = no storm. */
  stormMachines: number[];
  stormKernelMib: number;
  stormRamdiskMib: number;
  /** Storm load generator processes (the machines dealt over them). */
  stormClients: number;
  /** Only the image storm: no boot-API load runs, no lookup scaling. */
  imageStormOnly: boolean;
  /** Image fan-out (image_download_source local): agents per fan-out; empty = none. */
  fanoutAgents: number[];
  fanoutImageMib: number;
  /** The conductors' file servers copy every chunk ([deploy]http_server_sendfile = false): the figures before sendfile. */
  noSendfile: boolean;
  /** JSON-RPC between the API and the conductors over TLS with the install CA, as npm start runs it. */
  jsonRpcTls: boolean;
  /** Where the JSON result goes. */
  resultsDir: string;
  /** `--fleet N`: the fleet bench instead of the request bench (fleet.ts); null: not asked. */
  fleet: FleetBenchOptions | null;
}

export const BENCH_USAGE = `usage: npm run bench -- [--quick] [--nodes N] [--duration S] [--warmup S] [--rounds N]
                       [--concurrency 64,256] [--conductors N] [--client-concurrency N]
                       [--lookup-nodes N] [--sample N] [--load-generator auto|wrk|autocannon]
                       [--cpu-prof DIR] [--keep] [--hold] [--results DIR]
                       [--storm-machines 64,256|0] [--storm-kernel-mib N] [--storm-ramdisk-mib N]
                       [--storm-clients N] [--image-storm-only] [--no-sendfile] [--json-rpc-tls]
                       [--fanout-agents 64|0] [--fanout-image-mib N]
                       [--per-request-nodes N] [--bulk-batch N] [--bulk-concurrency N]
                       [--enrolment-only]
       npm run bench -- --fleet [N] [--conductors N] [--fleet-steps 1000,10000]
                       [--fleet-interval S] [--fleet-intervals N] [--fleet-latency 150,1000,2000]
                       [--fleet-error-rate 0.002] [--fleet-timeout-rate 0.001]

Starts PostgreSQL, the API and the conductors on free loopback ports in a throwaway
directory, enrols and deploys the nodes through the REST API, then loads
/v1/boot/<MAC>/boot.ipxe, nginx and a node:http file server serving the same files,
and prints one table (also written as JSON under bench/results/).

  --quick   1,000 nodes, one round of 5 s runs, 1 s warm-up, 20,000 nodes for lookup
            scaling, a 2 MiB kernel and 64 MiB ramdisk in the image storm (else three
            rounds of 10 s runs, 10 and 400 MiB)
  --rounds  rounds of load runs, each server once per round in turn (default 3);
            the figures are each server's medians, the ratios the medians of each
            round's ratio
  --storm-machines     machines downloading their deploy kernel and ramdisk at once
                       from their conductors, then from nginx (0: no image storm)
  --storm-clients      load generator processes for the storm (default 2)
  --image-storm-only   skip the boot-API load runs and lookup scaling (e.g. --nodes 256)
  --fanout-agents      agents fetching one instance image with image_download_source local: one
                       upstream download through the instance image cache, then served by the
                       conductors, then by nginx (0: no fan-out)
  --no-sendfile        the conductors' file servers copy every chunk through user space
                       ([deploy]http_server_sendfile = false), as before sendfile(2)
  --json-rpc-tls       JSON-RPC between the API and the conductors over TLS with a CA made
                       for the run, as npm start runs it (default: plain HTTP on loopback)
  --per-request-nodes  nodes enrolled as the CLI does, POST /v1/nodes then POST /v1/ports
                       (default 20 % of --nodes); the others through POST /v1/nodes/bulk
  --bulk-batch         nodes per POST /v1/nodes/bulk (default 500)
  --bulk-concurrency   POST /v1/nodes/bulk requests at a time (default 2)
  --enrolment-only     stop once both enrolment rates are measured
  --fleet   the fleet bench instead: N nodes (default 10,000) of the redfish hardware type,
            each behind a simulated BMC, on --conductors (default 1); power sync with health
            every --fleet-interval s (default 60), measured over --fleet-intervals (default 3)
            at each of --fleet-steps node counts (default a tenth of N, then N); the BMCs
            answer after a log-normal latency (--fleet-latency median,p99,max ms)
  --hold    set up, print the servers' URLs and PIDs, then wait for Ctrl-C (for profiling by hand)`;

/** The bench's flags, as util.parseArgs reads them; numbers are checked by parseBenchOptions. */
const BENCH_FLAGS = {
  help: { type: 'boolean', short: 'h' },
  quick: { type: 'boolean' },
  nodes: { type: 'string' },
  duration: { type: 'string' },
  warmup: { type: 'string' },
  rounds: { type: 'string' },
  concurrency: { type: 'string' },
  conductors: { type: 'string' },
  'client-concurrency': { type: 'string' },
  'per-request-nodes': { type: 'string' },
  'bulk-batch': { type: 'string' },
  'bulk-concurrency': { type: 'string' },
  'enrolment-only': { type: 'boolean' },
  'lookup-nodes': { type: 'string' },
  sample: { type: 'string' },
  'load-generator': { type: 'string' },
  'cpu-prof': { type: 'string' },
  'storm-machines': { type: 'string' },
  'storm-kernel-mib': { type: 'string' },
  'storm-ramdisk-mib': { type: 'string' },
  'storm-clients': { type: 'string' },
  'image-storm-only': { type: 'boolean' },
  'fanout-agents': { type: 'string' },
  'fanout-image-mib': { type: 'string' },
  'no-sendfile': { type: 'boolean' },
  'json-rpc-tls': { type: 'boolean' },
  keep: { type: 'boolean' },
  hold: { type: 'boolean' },
  results: { type: 'string' },
  fleet: { type: 'string' },
  'fleet-steps': { type: 'string' },
  'fleet-interval': { type: 'string' },
  'fleet-intervals': { type: 'string' },
  'fleet-latency': { type: 'string' },
  'fleet-error-rate': { type: 'string' },
  'fleet-timeout-rate': { type: 'string' },
} as const;

type StringFlag = {
  [K in keyof typeof BENCH_FLAGS]: (typeof BENCH_FLAGS)[K]['type'] extends 'string' ? K : never;
}[keyof typeof BENCH_FLAGS];

const LOAD_GENERATORS = ['auto', 'wrk', 'autocannon'] as const;

export function parseBenchOptions(argv: readonly string[], defaultResultsDir: string): BenchOptions | 'help' {
  const values = parseCommandLine(argv, BENCH_FLAGS, BENCH_USAGE);
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const number = (flag: StringFlag, fallback: number, min: number, max: number): number => {
    const text = values[flag];
    return text === undefined ? fallback : wholeNumber(flag, text, min, max);
  };
  const loadGenerator = values['load-generator'] ?? 'auto';
  if (!(LOAD_GENERATORS as readonly string[]).includes(loadGenerator)) {
    throw new UsageError(`--load-generator expects auto, wrk or autocannon, got ${JSON.stringify(loadGenerator)}`);
  }
  if (values['cpu-prof'] === '') throw new UsageError('--cpu-prof expects a directory');
  if (values.results === '') throw new UsageError('--results expects a directory');
  const stormMachines = values['storm-machines'];
  const fanoutAgents = values['fanout-agents'];
  const nodes = number('nodes', quick ? 1000 : 10_000, 10, 1_000_000);
  return {
    fleet: parseFleetBenchOptions(values, number),
    nodes,
    durationSeconds: number('duration', quick ? 5 : 10, 1, 600),
    warmupSeconds: number('warmup', quick ? 1 : 3, 0, 60),
    rounds: number('rounds', quick ? 1 : 3, 1, 20),
    concurrency:
      values.concurrency === undefined ? [64, 256] : wholeNumbers('concurrency', values.concurrency, 1, 10_000),
    conductors: number('conductors', 3, 1, 20),
    clientConcurrency: number('client-concurrency', 32, 1, 512),
    perRequestNodes: Math.min(nodes, number('per-request-nodes', Math.round(nodes * 0.2), 0, 1_000_000)),
    bulkBatchNodes: number('bulk-batch', 500, 1, 100_000),
    bulkConcurrency: number('bulk-concurrency', 2, 1, 64),
    enrolmentOnly: values['enrolment-only'] ?? false,
    lookupNodes: number('lookup-nodes', quick ? 20_000 : 100_000, 0, 10_000_000),
    sampleSize: number('sample', 200, 1, 100_000),
    loadGenerator: loadGenerator as BenchOptions['loadGenerator'],
    cpuProfileDir: values['cpu-prof'],
    keep: values.keep ?? false,
    hold: values.hold ?? false,
    quick,
    stormMachines:
      stormMachines === undefined
        ? [64, 256]
        : stormMachines === '0'
          ? []
          : wholeNumbers('storm-machines', stormMachines, 1, 4096),
    stormKernelMib: number('storm-kernel-mib', quick ? 2 : 10, 1, 1024),
    stormRamdiskMib: number('storm-ramdisk-mib', quick ? 64 : 400, 1, 8192),
    stormClients: number('storm-clients', 2, 1, 16),
    imageStormOnly: values['image-storm-only'] ?? false,
    fanoutAgents:
      fanoutAgents === undefined
        ? [64]
        : fanoutAgents === '0'
          ? []
          : wholeNumbers('fanout-agents', fanoutAgents, 1, 4096),
    fanoutImageMib: number('fanout-image-mib', quick ? 64 : 512, 1, 8192),
    noSendfile: values['no-sendfile'] ?? false,
    jsonRpcTls: values['json-rpc-tls'] ?? false,
    resultsDir: values.results ?? defaultResultsDir,
  };
}

/** The fleet bench's options: null unless `--fleet` was given (`--fleet` alone: 10,000). */
function parseFleetBenchOptions(
  values: ReturnType<typeof parseCommandLine<typeof BENCH_FLAGS>>,
  number: (flag: StringFlag, fallback: number, min: number, max: number) => number,
): FleetBenchOptions | null {
  const fleetFlags = Object.keys(values).filter((key) => key.startsWith('fleet-'));
  if (values.fleet === undefined) {
    if (fleetFlags.length > 0) throw new UsageError(`--${fleetFlags[0]} needs --fleet`);
    return null;
  }
  const nodes = number('fleet', 10_000, 1, 60_000);
  const steps =
    values['fleet-steps'] === undefined
      ? [...new Set([Math.max(1, Math.round(nodes / 10)), nodes])]
      : wholeNumbers('fleet-steps', values['fleet-steps'], 1, nodes);
  if (steps.some((step, i) => i > 0 && step <= (steps[i - 1] as number)) || steps.at(-1) !== nodes) {
    throw new UsageError(`--fleet-steps must rise and end at the fleet's ${nodes} nodes`);
  }
  const latency =
    values['fleet-latency'] === undefined
      ? [150, 1000, 2000]
      : wholeNumbers('fleet-latency', values['fleet-latency'], 1, 600_000);
  if (latency.length !== 3) throw new UsageError('--fleet-latency expects median,p99,max in ms');
  const [medianMs, p99Ms, maxMs] = latency as [number, number, number];
  return {
    nodes,
    steps,
    conductors: number('conductors', 1, 1, 20),
    intervalSeconds: number('fleet-interval', 60, 1, 3600),
    intervals: number('fleet-intervals', 3, 1, 100),
    latency: { medianMs, p99Ms, maxMs },
    errorRate:
      values['fleet-error-rate'] === undefined ? 0.002 : shareOption('fleet-error-rate', values['fleet-error-rate']),
    timeoutRate:
      values['fleet-timeout-rate'] === undefined
        ? 0.001
        : shareOption('fleet-timeout-rate', values['fleet-timeout-rate']),
  };
}
