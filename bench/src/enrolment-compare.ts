#!/usr/bin/env node
// Per-request enrolment of two (or more) trees side by side: each round starts each tree's own
// stack (its `npm start`: packages/stack/dist/main.js) in a throwaway directory and enrols the
// same nodes into it with this tree's client (`enrolNodes` of the bench, per request only), then
// stops it. The trees take turns (A B A B …), so a busy minute of the shared machine falls on
// both; the figure to read is the ratio of each round.
//
//   node bench/dist/enrolment-compare.js --tree today=. --tree old=/tmp/old-tree [--nodes 2000] [--rounds 3]
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ApiClient } from '@bmaas/api-client';
import { freePort, freePortBlock, parseCommandLine, UsageError, waitFor, wholeNumber } from '@bmaas/common';
import { environmentWithoutSettings } from '@bmaas/stack';
import { enrolNodes } from './enrolment.js';
import { ProcessTable, ResourceMonitor } from './process-stats.js';

const USAGE = `usage: node bench/dist/enrolment-compare.js --tree NAME=DIR --tree NAME=DIR [--nodes N] [--rounds N]
          [--client-concurrency N] [--conductors N] [--cpu-prof DIR] [--keep]

Per-request enrolment (POST /v1/nodes, then POST /v1/ports, as the bench's first path) of the
same N nodes (default 2,000) into each tree's own stack in turn, a fresh stack and database each
time, for --rounds rounds (default 3); prints nodes/s per run and each round's ratio to the first
tree. Each DIR must be built (npx tsc -b there). With --cpu-prof the API of every run writes
api-<pid>-1.cpuprofile there (node bench/dist/profile-summary.js FILE).`;

const PROFILE_PRELOAD = fileURLToPath(new URL('./cpu-profile-preload.js', import.meta.url));

interface Tree {
  name: string;
  dir: string;
}

interface Run {
  round: number;
  tree: string;
  nodesPerSecond: number;
  seconds: number;
  cpuSeconds: Record<string, number>;
}

function log(line: string): void {
  process.stderr.write(`[enrolment-compare] ${line}\n`);
}

/** PIDs under `root`, its children's children included. */
function descendants(table: ProcessTable, root: number): number[] {
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    for (const child of table.childrenOf(pid)) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function runOnce(
  tree: Tree,
  options: { nodes: number; concurrency: number; conductors: number; cpuProfileDir?: string; keep: boolean },
): Promise<Omit<Run, 'round'>> {
  const workDir = mkdtempSync(join(os.tmpdir(), `bmaas-enrol-${tree.name}-`));
  chmodSync(workDir, 0o755);
  const configFile = join(workDir, 'bench.conf');
  // Only options both trees know: their configuration is strict. As the bench's own stack: no
  // authentication, JSON-RPC in plain HTTP (npm start turns on http_basic and TLS; this file overrides them).
  writeFileSync(
    configFile,
    [
      '[DEFAULT]',
      `state_path = ${join(workDir, 'state')}`,
      'log_format = json',
      'auth_strategy = noauth',
      '[json_rpc]',
      'auth_strategy = noauth',
      'use_ssl = false',
      '[conductor]',
      'automated_clean = false',
      '[database]',
      `embedded_port = ${await freePort()}`,
      '',
    ].join('\n'),
  );
  const apiPort = await freePort();
  const environment = environmentWithoutSettings();
  if (options.cpuProfileDir) {
    environment.BENCH_CPU_PROFILE_DIR = options.cpuProfileDir;
    environment.NODE_OPTIONS =
      `${environment.NODE_OPTIONS ?? ''} --import ${pathToFileURL(PROFILE_PRELOAD).href}`.trim();
  }
  const output = openSync(join(workDir, 'stack.log'), 'a');
  const child = spawn(
    process.execPath,
    [
      join(tree.dir, 'packages', 'stack', 'dist', 'main.js'),
      '--conductors',
      String(options.conductors),
      '--api-port',
      String(apiPort),
      '--json-rpc-base-port',
      String(await freePortBlock(options.conductors)),
      '--http-base-port',
      String(await freePortBlock(options.conductors)),
      '--config-file',
      configFile,
    ],
    { cwd: tree.dir, env: environment, stdio: ['ignore', output, output] },
  );
  let exited: string | null = null;
  const exit = new Promise<void>((done) =>
    child.on('exit', (code, signal) => {
      exited = `the stack exited (${signal ?? code})`;
      done();
    }),
  );
  const api = new ApiClient(`http://127.0.0.1:${apiPort}`, { version: 'latest' });
  try {
    await waitFor(
      `${tree.name}'s API`,
      async () => {
        const answer = await api.request('GET', '/v1/conductors').catch(() => undefined);
        // Enrolment needs a conductor to map nodes to: wait until every conductor registered.
        const list = (answer?.body as { conductors?: unknown[] } | undefined)?.conductors;
        return answer?.status === 200 && (list?.length ?? 0) >= options.conductors ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, abortReason: () => exited },
    );
    const table = new ProcessTable();
    const pidsOf = (pattern: RegExp) => () =>
      descendants(table, child.pid as number).filter((pid) => pattern.test(commandLine(pid)));
    const groups = new Map<string, () => number[]>([
      ['api', pidsOf(/packages\/api\/dist\//)],
      ['conductors', pidsOf(/packages\/conductor\/dist\//)],
      ['postgres', pidsOf(/^postgres/)],
      ['client', () => [process.pid]],
    ]);
    let monitor: ResourceMonitor | undefined;
    const apiPids = groups.get('api') as () => number[];
    const result = await enrolNodes(api, options.nodes, {
      perRequestNodes: options.nodes,
      concurrency: options.concurrency,
      bulkBatchNodes: 1,
      bulkConcurrency: 1,
      images: { kernel: 'http://127.0.0.1:9/vmlinuz', ramdisk: 'http://127.0.0.1:9/initrd.img' },
      progress: () => {},
      measure: () => {
        if (options.cpuProfileDir) for (const pid of apiPids()) process.kill(pid, 'SIGUSR2');
        monitor = new ResourceMonitor(groups);
        monitor.start();
        return () => {
          if (options.cpuProfileDir) for (const pid of apiPids()) process.kill(pid, 'SIGUSR2');
          return Object.fromEntries([...(monitor as ResourceMonitor).stop()].map(([g, use]) => [g, use.cpuSeconds]));
        };
      },
    });
    const perRequest = result.perRequest;
    if (!perRequest) throw new Error('no node enrolled');
    return {
      tree: tree.name,
      nodesPerSecond: perRequest.nodesPerSecond,
      seconds: perRequest.seconds,
      cpuSeconds: perRequest.cpuSeconds ?? {},
    };
  } finally {
    api.close();
    if (!exited) child.kill('SIGTERM');
    await Promise.race([exit, new Promise((done) => setTimeout(done, 60_000))]);
    if (!exited) child.kill('SIGKILL');
    if (options.keep) log(`kept ${workDir}`);
    else rmSync(workDir, { recursive: true, force: true });
  }
}

async function main(argv: string[]): Promise<void> {
  const values = parseCommandLine(
    argv,
    {
      help: { type: 'boolean', short: 'h' },
      tree: { type: 'string', multiple: true },
      nodes: { type: 'string' },
      rounds: { type: 'string' },
      'client-concurrency': { type: 'string' },
      conductors: { type: 'string' },
      'cpu-prof': { type: 'string' },
      keep: { type: 'boolean' },
    },
    USAGE,
  );
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const trees: Tree[] = (values.tree ?? []).map((spec) => {
    const [name, dir] = spec.split(/=(.*)/s, 2);
    if (!name || !dir) throw new UsageError(`--tree expects NAME=DIR, got ${spec}\n${USAGE}`);
    const full = resolve(dir);
    if (!existsSync(join(full, 'packages', 'stack', 'dist', 'main.js')))
      throw new UsageError(`${full}: no packages/stack/dist/main.js (build it: npx tsc -b there)`);
    return { name, dir: full };
  });
  if (trees.length < 1) throw new UsageError(`at least one --tree\n${USAGE}`);
  const nodes = values.nodes === undefined ? 2000 : wholeNumber('nodes', values.nodes, 1, 1_000_000);
  const rounds = values.rounds === undefined ? 3 : wholeNumber('rounds', values.rounds, 1, 100);
  const concurrency =
    values['client-concurrency'] === undefined
      ? 32
      : wholeNumber('client-concurrency', values['client-concurrency'], 1, 1024);
  const conductors = values.conductors === undefined ? 3 : wholeNumber('conductors', values.conductors, 1, 50);
  const cpuProfileDir = values['cpu-prof'] ? resolve(values['cpu-prof']) : undefined;
  if (cpuProfileDir) mkdirSync(cpuProfileDir, { recursive: true });

  log(
    `${nodes} nodes per request, ${concurrency} at a time, ${conductors} conductors; load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const runs: Run[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Alternate which tree goes first, so neither always follows the other's teardown.
    const order = round % 2 === 1 ? trees : [...trees].reverse();
    for (const tree of order) {
      const run = {
        round,
        ...(await runOnce(tree, {
          nodes,
          concurrency,
          conductors,
          keep: values.keep ?? false,
          ...(cpuProfileDir ? { cpuProfileDir } : {}),
        })),
      };
      runs.push(run);
      const cpu = Object.entries(run.cpuSeconds)
        .map(([group, seconds]) => `${group} ${((seconds * 1000) / nodes).toFixed(2)}`)
        .join(', ');
      log(
        `round ${round} ${tree.name}: ${Math.round(run.nodesPerSecond)} nodes/s (${run.seconds.toFixed(1)} s); CPU ms/node: ${cpu}`,
      );
    }
    const first = trees[0] as Tree;
    const base = runs.find((r) => r.round === round && r.tree === first.name) as Run;
    for (const tree of trees.slice(1)) {
      const other = runs.find((r) => r.round === round && r.tree === tree.name) as Run;
      log(`round ${round}: ${first.name} / ${tree.name} = ${(base.nodesPerSecond / other.nodesPerSecond).toFixed(3)}`);
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
  };
  const lines = [
    `load average after: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  ];
  for (const tree of trees) {
    const mine = runs.filter((r) => r.tree === tree.name);
    lines.push(
      `${tree.name}: median ${Math.round(median(mine.map((r) => r.nodesPerSecond)))} nodes/s ` +
        `(${mine.map((r) => Math.round(r.nodesPerSecond)).join(', ')})`,
    );
  }
  const first = trees[0] as Tree;
  for (const tree of trees.slice(1)) {
    const ratios = Array.from({ length: rounds }, (_, i) => {
      const a = runs.find((r) => r.round === i + 1 && r.tree === first.name) as Run;
      const b = runs.find((r) => r.round === i + 1 && r.tree === tree.name) as Run;
      return a.nodesPerSecond / b.nodesPerSecond;
    });
    lines.push(
      `${first.name} / ${tree.name}: median ${median(ratios).toFixed(3)} (rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')})`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

main(process.argv.slice(2)).catch((error: Error) => {
  process.stderr.write(`${error instanceof UsageError ? error.message : (error.stack ?? error.message)}\n`);
  process.exit(1);
});
