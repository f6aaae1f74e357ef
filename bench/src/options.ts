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
  /** Where the JSON result goes. */
  resultsDir: string;
}

export const BENCH_USAGE = `usage: npm run bench -- [--quick] [--nodes N] [--duration S] [--warmup S] [--rounds N]
                       [--concurrency 64,256] [--conductors N] [--client-concurrency N]
                       [--lookup-nodes N] [--sample N] [--load-generator auto|wrk|autocannon]
                       [--cpu-prof DIR] [--keep] [--hold] [--results DIR]
                       [--storm-machines 64,256|0] [--storm-kernel-mib N] [--storm-ramdisk-mib N]
                       [--storm-clients N] [--image-storm-only] [--no-sendfile]
                       [--fanout-agents 64|0] [--fanout-image-mib N]
                       [--per-request-nodes N] [--bulk-batch N] [--bulk-concurrency N]
                       [--enrolment-only]

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
  --per-request-nodes  nodes enrolled as the CLI does, POST /v1/nodes then POST /v1/ports
                       (default 20 % of --nodes); the others through POST /v1/nodes/bulk
  --bulk-batch         nodes per POST /v1/nodes/bulk (default 500)
  --bulk-concurrency   POST /v1/nodes/bulk requests at a time (default 2)
  --enrolment-only     stop once both enrolment rates are measured
  --hold    set up, print the servers' URLs and PIDs, then wait for Ctrl-C (for profiling by hand)`;

export class BenchUsageError extends Error {}

function wholeNumber(name: string, text: string | undefined, min: number, max: number): number {
  const value = Number(text);
  if (!text || !Number.isInteger(value) || value < min || value > max) {
    throw new BenchUsageError(`--${name} expects a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export function parseBenchOptions(argv: readonly string[], defaultResultsDir: string): BenchOptions | 'help' {
  const quick = argv.includes('--quick');
  const options: BenchOptions = {
    nodes: quick ? 1000 : 10_000,
    durationSeconds: quick ? 5 : 10,
    warmupSeconds: quick ? 1 : 3,
    rounds: quick ? 1 : 3,
    concurrency: [64, 256],
    conductors: 3,
    clientConcurrency: 32,
    perRequestNodes: 0,
    bulkBatchNodes: 500,
    bulkConcurrency: 2,
    enrolmentOnly: false,
    lookupNodes: quick ? 20_000 : 100_000,
    sampleSize: 200,
    loadGenerator: 'auto',
    cpuProfileDir: undefined,
    keep: false,
    hold: false,
    quick,
    stormMachines: [64, 256],
    stormKernelMib: quick ? 2 : 10,
    stormRamdiskMib: quick ? 64 : 400,
    stormClients: 2,
    imageStormOnly: false,
    fanoutAgents: [64],
    fanoutImageMib: quick ? 64 : 512,
    noSendfile: false,
    resultsDir: defaultResultsDir,
  };
  let perRequestNodes: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--help':
      case '-h':
        return 'help';
      case '--quick':
        break;
      case '--nodes':
        options.nodes = wholeNumber('nodes', value(), 10, 1_000_000);
        break;
      case '--duration':
        options.durationSeconds = wholeNumber('duration', value(), 1, 600);
        break;
      case '--warmup':
        options.warmupSeconds = wholeNumber('warmup', value(), 0, 60);
        break;
      case '--rounds':
        options.rounds = wholeNumber('rounds', value(), 1, 20);
        break;
      case '--concurrency':
        options.concurrency = (value() ?? '').split(',').map((c) => wholeNumber('concurrency', c, 1, 10_000));
        break;
      case '--conductors':
        options.conductors = wholeNumber('conductors', value(), 1, 20);
        break;
      case '--client-concurrency':
        options.clientConcurrency = wholeNumber('client-concurrency', value(), 1, 512);
        break;
      case '--per-request-nodes':
        perRequestNodes = wholeNumber('per-request-nodes', value(), 0, 1_000_000);
        break;
      case '--bulk-batch':
        options.bulkBatchNodes = wholeNumber('bulk-batch', value(), 1, 100_000);
        break;
      case '--bulk-concurrency':
        options.bulkConcurrency = wholeNumber('bulk-concurrency', value(), 1, 64);
        break;
      case '--enrolment-only':
        options.enrolmentOnly = true;
        break;
      case '--lookup-nodes':
        options.lookupNodes = wholeNumber('lookup-nodes', value(), 0, 10_000_000);
        break;
      case '--sample':
        options.sampleSize = wholeNumber('sample', value(), 1, 100_000);
        break;
      case '--load-generator': {
        const name = value();
        if (name !== 'auto' && name !== 'wrk' && name !== 'autocannon') {
          throw new BenchUsageError(`--load-generator expects auto, wrk or autocannon, got ${JSON.stringify(name)}`);
        }
        options.loadGenerator = name;
        break;
      }
      case '--cpu-prof':
        options.cpuProfileDir = value();
        if (!options.cpuProfileDir) throw new BenchUsageError('--cpu-prof expects a directory');
        break;
      case '--storm-machines': {
        const list = value() ?? '';
        options.stormMachines =
          list === '0' ? [] : list.split(',').map((c) => wholeNumber('storm-machines', c, 1, 4096));
        break;
      }
      case '--storm-kernel-mib':
        options.stormKernelMib = wholeNumber('storm-kernel-mib', value(), 1, 1024);
        break;
      case '--storm-ramdisk-mib':
        options.stormRamdiskMib = wholeNumber('storm-ramdisk-mib', value(), 1, 8192);
        break;
      case '--storm-clients':
        options.stormClients = wholeNumber('storm-clients', value(), 1, 16);
        break;
      case '--image-storm-only':
        options.imageStormOnly = true;
        break;
      case '--fanout-agents': {
        const list = value() ?? '';
        options.fanoutAgents = list === '0' ? [] : list.split(',').map((c) => wholeNumber('fanout-agents', c, 1, 4096));
        break;
      }
      case '--fanout-image-mib':
        options.fanoutImageMib = wholeNumber('fanout-image-mib', value(), 1, 8192);
        break;
      case '--no-sendfile':
        options.noSendfile = true;
        break;
      case '--keep':
        options.keep = true;
        break;
      case '--hold':
        options.hold = true;
        break;
      case '--results':
        options.resultsDir = value() ?? '';
        if (!options.resultsDir) throw new BenchUsageError('--results expects a directory');
        break;
      default:
        throw new BenchUsageError(`unknown option ${flag}\n${BENCH_USAGE}`);
    }
  }
  options.perRequestNodes = Math.min(options.nodes, perRequestNodes ?? Math.round(options.nodes * 0.2));
  return options;
}
