import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WrkLoadGenerator } from '../../bench/src/load-generator.js';
import {
  machineCountersBetween,
  parseProcNetCounters,
  parseStealTicks,
  readMachineCounters,
} from '../../bench/src/machine-counters.js';
import { BOOT_PATH_PATTERN, bootPath, macForIndex, sample, toHyphens } from '../../bench/src/macs.js';
import { findNginx, renderNginxConfig, startNginx, unprivilegedUser } from '../../bench/src/nginx.js';
import { parseBenchOptions } from '../../bench/src/options.js';
import { cpuSeconds, ResourceMonitor, rssKilobytes } from '../../bench/src/process-stats.js';
import { median, ratiosOf, summariesOf } from '../../bench/src/report.js';
import { createStaticBootFileServer } from '../../bench/src/static-file-server.js';
import { parseWrkOutput, renderWrkScript } from '../../bench/src/wrk-script.js';

/** The pieces of `npm run bench`, checked fast: no stack, no timed assertions. */

const NODE_UUIDS = ['0a6f1f36-0000-4000-8000-000000000001', '0a6f1f36-0000-4000-8000-000000000002'];

/** Two http roots laid out as the iPXE boot interface lays them: <uuid>/config and pxelinux.cfg/<mac> links. */
function makeRoots(dir: string): string[] {
  const roots = [join(dir, 'root-1'), join(dir, 'root-2')];
  NODE_UUIDS.forEach((uuid, i) => {
    const root = roots[i] as string;
    mkdirSync(join(root, uuid), { recursive: true });
    mkdirSync(join(root, 'pxelinux.cfg'), { recursive: true });
    writeFileSync(join(root, uuid, 'config'), `#!ipxe\necho ${uuid}\n`);
    symlinkSync(`../${uuid}/config`, join(root, 'pxelinux.cfg', toHyphens(macForIndex(i))));
  });
  return roots;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

describe('bench pieces', () => {
  let dir: string;
  let roots: string[];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-bench-test-'));
    // nginx's workers run as nobody when the test runs as root.
    chmodSync(dir, 0o755);
    roots = makeRoots(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('numbers MACs by node index and writes the paths firmware asks for', () => {
    expect(macForIndex(0)).toBe('52:54:01:00:00:00');
    expect(macForIndex(0xabcdef)).toBe('52:54:01:ab:cd:ef');
    expect(() => macForIndex(0x1000000)).toThrow(RangeError);
    expect(bootPath('52:54:01:AB:00:01')).toBe('/v1/boot/52-54-01-ab-00-01/boot.ipxe');
    const pattern = new RegExp(BOOT_PATH_PATTERN);
    expect(pattern.exec(bootPath(macForIndex(7)))?.[1]).toBe('52-54-01-00-00-07');
    expect(pattern.test('/v1/boot/52:54:01:00:00:07/boot.ipxe')).toBe(false);
    expect(pattern.test('/v1/boot/52-54-01-00-00-07/../../etc/passwd')).toBe(false);
    const picked = sample([1, 2, 3, 4, 5], 3);
    expect(new Set(picked).size).toBe(3);
    expect(sample([1, 2], 5)).toHaveLength(2);
  });

  it('parses options, --quick setting the small defaults', () => {
    const quick = parseBenchOptions(['--quick', '--concurrency', '8,32'], '/r');
    expect(quick).toMatchObject({
      nodes: 1000,
      durationSeconds: 5,
      concurrency: [8, 32],
      quick: true,
      resultsDir: '/r',
    });
    expect(quick).toMatchObject({ rounds: 1, jsonRpcTls: false });
    expect(parseBenchOptions(['--json-rpc-tls'], '/r')).toMatchObject({ jsonRpcTls: true });
    expect(parseBenchOptions([], '/r')).toMatchObject({ durationSeconds: 10, rounds: 3 });
    expect(parseBenchOptions(['--rounds', '5'], '/r')).toMatchObject({ rounds: 5 });
    expect(() => parseBenchOptions(['--rounds', '0'], '/r')).toThrow(/--rounds/);
    expect(parseBenchOptions(['--nodes=2500', '--duration', '20'], '/r')).toMatchObject({
      nodes: 2500,
      durationSeconds: 20,
      concurrency: [64, 256],
    });
    expect(parseBenchOptions(['--nodes', '10000'], '/r')).toMatchObject({
      perRequestNodes: 2000,
      bulkBatchNodes: 500,
      bulkConcurrency: 2,
      enrolmentOnly: false,
    });
    expect(
      parseBenchOptions(['--nodes', '300', '--per-request-nodes', '500', '--bulk-batch=100', '--enrolment-only'], '/r'),
    ).toMatchObject({ nodes: 300, perRequestNodes: 300, bulkBatchNodes: 100, enrolmentOnly: true });
    expect(() => parseBenchOptions(['--nodes', 'lots'], '/r')).toThrow(UsageError);
    expect(() => parseBenchOptions(['--frobnicate'], '/r')).toThrow(/unknown option/);
  });

  it('parses the fleet bench options: a tenth then all, one conductor, 60 s intervals by default', () => {
    const fleetOf = (argv: string[]) => {
      const options = parseBenchOptions(argv, '/r');
      if (options === 'help') throw new Error('help');
      return options.fleet;
    };
    expect(fleetOf([])).toBeNull();
    expect(fleetOf(['--fleet', '10000'])).toEqual({
      nodes: 10_000,
      steps: [1000, 10_000],
      conductors: 1,
      intervalSeconds: 60,
      intervals: 3,
      latency: { medianMs: 150, p99Ms: 1000, maxMs: 2000 },
      errorRate: 0.002,
      timeoutRate: 0.001,
    });
    expect(
      fleetOf([
        '--fleet',
        '30000',
        '--conductors',
        '3',
        '--fleet-steps',
        '3000,30000',
        '--fleet-latency',
        '20,100,300',
      ]),
    ).toMatchObject({ steps: [3000, 30_000], conductors: 3, latency: { medianMs: 20, p99Ms: 100, maxMs: 300 } });
    expect(() => parseBenchOptions(['--fleet-interval', '5'], '/r')).toThrow(/needs --fleet/);
    expect(() => parseBenchOptions(['--fleet', '100', '--fleet-steps', '50,40'], '/r')).toThrow(/must rise and end/);
    expect(() => parseBenchOptions(['--fleet', '100', '--fleet-error-rate', '5'], '/r')).toThrow(/share from 0 to 1/);
  });

  it('serves the pxelinux.cfg link of a MAC from whichever root has it (node:http file server)', async () => {
    const server = createStaticBootFileServer({ roots, pxeConfigSubdir: 'pxelinux.cfg' });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await get(`${base}${bootPath(macForIndex(0))}`)).toEqual({
        status: 200,
        body: `#!ipxe\necho ${NODE_UUIDS[0]}\n`,
      });
      expect(await get(`${base}${bootPath(macForIndex(1))}`)).toEqual({
        status: 200,
        body: `#!ipxe\necho ${NODE_UUIDS[1]}\n`,
      });
      expect((await get(`${base}${bootPath(macForIndex(2))}`)).status).toBe(404);
      expect((await get(`${base}/pxelinux.cfg/${toHyphens(macForIndex(0))}`)).status).toBe(404);
    } finally {
      server.close();
    }
  });

  it('renders an nginx site that rewrites the boot path to the link, trying each root in turn', async () => {
    const site = { port: 8, roots, pxeConfigSubdir: 'pxelinux.cfg', prefixDir: join(dir, 'nginx-text') };
    const config = renderNginxConfig(site);
    expect(config).toContain('worker_processes 1;');
    expect(config).toContain('sendfile on;');
    expect(config).toContain(`rewrite "${BOOT_PATH_PATTERN}" /pxelinux.cfg/$1 last;`);
    expect(config).toContain(`location /pxelinux.cfg/ {\n      root ${roots[0]};\n      try_files $uri @root1;`);
    expect(config).toContain(`location @root1 {\n      root ${roots[1]};\n      try_files $uri =404;`);
    expect(() => renderNginxConfig({ ...site, roots: [] })).toThrow();
  });

  const nginx = findNginx();
  it.skipIf(!nginx)('serves the same files through nginx (when installed)', async () => {
    const server = await startNginx(nginx as string, {
      port: await freeLoopbackPort(),
      roots,
      pxeConfigSubdir: 'pxelinux.cfg',
      prefixDir: join(dir, 'nginx'),
      user: unprivilegedUser(),
    });
    try {
      expect(await get(`${server.baseUrl}${bootPath(macForIndex(1))}`)).toEqual({
        status: 200,
        body: `#!ipxe\necho ${NODE_UUIDS[1]}\n`,
      });
      expect((await get(`${server.baseUrl}${bootPath(macForIndex(2))}`)).status).toBe(404);
    } finally {
      await server.stop();
    }
    expect(server.running).toBe(false);
  });

  it('writes a wrk script reading the MAC list, and parses its summary line', () => {
    const script = renderWrkScript('/tmp/with "quote"/macs.txt');
    expect(script).toContain('io.lines("/tmp/with \\"quote\\"/macs.txt")');
    expect(script).toContain('"/v1/boot/" .. macs[math.random(#macs)] .. "/boot.ipxe"');
    const summary = parseWrkOutput(
      'Running 1s test\nBENCH_RESULT {"requests":10,"durationUs":1000000,"bytes":1,"errors":{"connect":0,"read":0,"write":0,"status":2,"timeout":0},"latencyUs":{"p50":1,"p90":2,"p99":3,"max":4,"mean":1.5}}\n',
    );
    expect(summary.errors.status).toBe(2);
    expect(() => parseWrkOutput('no summary')).toThrow(/no summary/);
  });

  const wrk = spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!wrk)('drives wrk over random MACs of the list (when installed)', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(seen.length % 50 === 0 ? 404 : 200, { 'content-length': 2 }).end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const macs = Array.from({ length: 20 }, (_, i) => macForIndex(i));
    try {
      const result = await new WrkLoadGenerator(dir).run({
        baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        macs,
        concurrency: 2,
        durationSeconds: 1,
      });
      expect(result.requests).toBeGreaterThan(0);
      // wrk counts the 404s it received (one or two may still have been on their way at the end).
      const notFound = seen.filter((_, i) => (i + 1) % 50 === 0).length;
      expect(result.errors.status).toBeGreaterThan(0);
      expect(result.errors.status).toBeLessThanOrEqual(notFound);
      expect(result.errors.status).toBeGreaterThanOrEqual(notFound - 2);
      const asked = new Set(seen);
      for (const path of asked) expect(macs.map(bootPath)).toContain(path);
      expect(asked.size).toBeGreaterThan(10);
    } finally {
      server.close();
    }
  });

  it('reads CPU time and RSS from /proc, and sums them per process group', async () => {
    expect(rssKilobytes(process.pid)).toBeGreaterThan(1000);
    expect(cpuSeconds(process.pid)).toBeGreaterThan(0);
    expect(cpuSeconds(2 ** 22 + 1)).toBeUndefined();
    const monitor = new ResourceMonitor(new Map([['self', () => [process.pid]]]));
    monitor.start(10);
    const until = performance.now() + 150;
    while (performance.now() < until) Math.sqrt(Math.random());
    const use = monitor.stop().get('self');
    expect(use?.cpuSeconds).toBeGreaterThan(0);
    expect(use?.peakRssMb).toBeGreaterThan(1);
  });

  it("reads the kernel's TCP loss counters (name line, then value line, per protocol) and CPU steal", async () => {
    const text = [
      'Ip: Forwarding DefaultTTL',
      'Ip: 1 64',
      'Tcp: RtoAlgorithm RtoMin RetransSegs InErrs',
      'Tcp: 1 200 4737 2',
      'TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes',
      'TcpExt: 0 39 4806',
      'MPTcpExt: MPCapableSYNRX',
      '',
    ].join('\n');
    const counters = parseProcNetCounters(text);
    expect(counters.get('Tcp.RetransSegs')).toBe(4737);
    expect(counters.get('TcpExt.TCPTimeouts')).toBe(39);
    expect(counters.get('Ip.DefaultTTL')).toBe(64);
    expect(counters.has('MPTcpExt.MPCapableSYNRX')).toBe(false);
    expect(parseStealTicks('cpu  2326218 270 500746 6115023 26649 0 40295 16461 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10')).toBe(
      16461,
    );
    expect(parseStealTicks('intr 1 2 3')).toBeNull();
    expect(
      machineCountersBetween(
        { tcp: { retransmittedSegments: 10, timeouts: 1, lossProbes: 5 }, stealSeconds: 1.5 },
        { tcp: { retransmittedSegments: 13, timeouts: 3, lossProbes: 5 }, stealSeconds: 2 },
      ),
    ).toEqual({ tcp: { retransmittedSegments: 3, timeouts: 2, lossProbes: 0 }, stealSeconds: 0.5 });
    const now = await readMachineCounters();
    if (process.platform === 'linux') {
      expect(now?.tcp.retransmittedSegments).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(now?.tcp.timeouts)).toBe(true);
      expect(now?.stealSeconds).toBeGreaterThanOrEqual(0);
    }
  });

  it('computes the ratios of the boot API to the static servers per concurrency, round by round', () => {
    const run = (server: string, concurrency: number, requestsPerSecond: number, round = 1, p99 = 10) => ({
      server,
      concurrency,
      round,
      resources: {},
      machine: null,
      result: {
        requests: 0,
        durationSeconds: 1,
        requestsPerSecond,
        latencyMs: { p50: 1, p90: 0, p99, max: 0 },
        errors: { socket: 0, status: 0, timeout: 0, total: round === 2 ? 1 : 0 },
      },
    });
    expect(ratiosOf([run('boot-api', 64, 1000), run('nginx', 64, 20_000), run('node-static', 64, 4000)])).toEqual([
      {
        concurrency: 64,
        bootApiToNginx: 0.05,
        bootApiToNodeStatic: 0.25,
        bootApiToNginxRounds: [0.05],
        bootApiToNodeStaticRounds: [0.25],
      },
    ]);
    expect(ratiosOf([run('boot-api', 8, 10)])).toEqual([
      {
        concurrency: 8,
        bootApiToNginx: null,
        bootApiToNodeStatic: null,
        bootApiToNginxRounds: [],
        bootApiToNodeStaticRounds: [],
      },
    ]);
    // Three rounds: each boot-API run is paired with nginx's of its round, and the median ratio is reported.
    const rounds = [
      run('boot-api', 64, 3000, 1, 30),
      run('nginx', 64, 10_000, 1, 9),
      run('boot-api', 64, 1000, 2, 50),
      run('nginx', 64, 2000, 2, 20),
      run('boot-api', 64, 4000, 3, 20),
      run('nginx', 64, 10_000, 3, 8),
    ];
    expect(ratiosOf(rounds)).toEqual([
      {
        concurrency: 64,
        bootApiToNginx: 0.4,
        bootApiToNodeStatic: null,
        bootApiToNginxRounds: [0.3, 0.5, 0.4],
        bootApiToNodeStaticRounds: [],
      },
    ]);
    expect(summariesOf(rounds)).toEqual([
      {
        server: 'boot-api',
        concurrency: 64,
        rounds: 3,
        requestsPerSecond: 3000,
        latencyMs: { p50: 1, p99: 30 },
        errors: 1,
      },
      {
        server: 'nginx',
        concurrency: 64,
        rounds: 3,
        requestsPerSecond: 10_000,
        latencyMs: { p50: 1, p99: 9 },
        errors: 1,
      },
    ]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = http.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
