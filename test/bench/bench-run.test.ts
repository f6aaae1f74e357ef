import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findNginx } from '../../bench/src/nginx.js';
import { missingPrerequisite } from '../support/prerequisites.js';

/**
 * `npm run bench` end to end, as small as it goes: the whole stack, enrolment
 * (per request and in bulk),
 * provisioning, the body check (each node's script from its owner, the same bytes
 * from nginx and node-static), the load runs, lookup scaling, the image storm and
 * its range checks. Figures are not asserted (benchmarks print them); a wrong
 * answer anywhere makes the bench exit 1, and that is what this checks.
 */
const BENCH_MAIN = fileURLToPath(new URL('../../bench/dist/main.js', import.meta.url));
const TIMEOUT_MS = 300_000;
const missing = missingPrerequisite(
  'npm run bench',
  findNginx() === undefined ? 'nginx is not installed (nginx-light, test/debian-packages.txt)' : null,
);

describe.skipIf(missing)('npm run bench, a tiny run', () => {
  const results = mkdtempSync(join(tmpdir(), 'bmaas-bench-run-'));
  afterAll(() => rmSync(results, { recursive: true, force: true }));

  it(
    'passes its own correctness checks against the stack, nginx and node-static',
    async () => {
      const args = [
        BENCH_MAIN,
        ...['--nodes', '100', '--duration', '1', '--warmup', '1', '--concurrency', '8'],
        ...['--lookup-nodes', '1000', '--sample', '50'],
        ...['--storm-machines', '4', '--storm-kernel-mib', '1', '--storm-ramdisk-mib', '8'],
        ...['--fanout-agents', '4', '--fanout-image-mib', '8'],
        // As npm start runs: the boot path's JSON-RPC calls over TLS (the body check goes through them).
        '--json-rpc-tls',
        ...['--results', results],
      ];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const timer = setTimeout(() => child.kill('SIGINT'), TIMEOUT_MS - 10_000);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      clearTimeout(timer);
      expect(code, output.slice(-4000)).toBe(0);
      expect(output).toContain('(JSON-RPC over TLS)');
      expect(output).toContain('body check: 50 nodes, 0 failures');
      expect(output).toContain('range checks, conductors: 12/12 pass');
      expect(output).toContain('image fan-out, 4 agents: 1 upstream download(s)');
      // 20 % of the nodes through the CLI's path, the others in one POST /v1/nodes/bulk.
      expect(output).toMatch(/enrolment, per request \(CLI path[^)]*\): \d+ nodes\/s \(20 in /);
      expect(output).toMatch(/enrolment, bulk \(POST \/v1\/nodes\/bulk[^)]*\): \d+ nodes\/s \(80 in /);
    },
    TIMEOUT_MS,
  );
});
