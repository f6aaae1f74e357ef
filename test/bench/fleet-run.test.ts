import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetReport } from '../../bench/src/fleet.js';

/**
 * `npm run bench -- --fleet` as small as it goes: 60 simulated BMCs, nodes enrolled in two
 * steps on one conductor, the power sync every 5 s, one measured interval per step (the
 * reported runs use 60 s). What a fleet bench must show to be trusted is checked: every
 * node's BMC was read in every interval, never more than one request in flight to a BMC,
 * the conductor's statements counted, its CPU and RSS read; the bench exits 1 when a goal
 * is missed, and 0 is what this expects of so small a fleet.
 */
const BENCH_MAIN = fileURLToPath(new URL('../../bench/dist/main.js', import.meta.url));
const TIMEOUT_MS = 150_000;

describe('npm run bench -- --fleet, a tiny run', () => {
  const results = mkdtempSync(join(tmpdir(), 'bmaas-bench-fleet-'));
  afterAll(() => rmSync(results, { recursive: true, force: true }));

  it(
    'reads every node of a fleet in every interval, one request at a time per BMC',
    async () => {
      const args = [
        BENCH_MAIN,
        ...['--fleet', '60', '--fleet-steps', '20,60', '--fleet-interval', '5', '--fleet-intervals', '1'],
        // No 5xx or dropped requests: a retry 4 s later ([redfish]connection_retry_interval) would miss a 5 s interval.
        ...['--fleet-latency', '20,100,300', '--fleet-error-rate', '0', '--fleet-timeout-rate', '0'],
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
      expect(output).toContain("Ironic's published figures");
      const file = readdirSync(results).find((name) => name.startsWith('fleet-'));
      expect(file, output.slice(-2000)).toBeDefined();
      const report = JSON.parse(readFileSync(join(results, file as string), 'utf8')) as FleetReport;
      expect(report.steps.map((s) => s.nodes)).toEqual([20, 60]);
      for (const step of report.steps) {
        expect(step.firstFullReadingSeconds).not.toBeNull();
        expect(step.maxInFlightPerBmc).toBe(1);
        expect(step.maintenance).toBe(0);
        for (const interval of step.intervals) {
          expect(interval.notReadShare).toBe(0);
          expect(interval.conductorCpuShare[0]).toBeGreaterThan(0);
          expect(interval.conductorPeakRssMb[0]).toBeGreaterThan(20);
          expect(interval.dbQueriesPerNodeRead).toBeGreaterThan(0);
          expect(interval.bmcRequestsPerSecond).toBeGreaterThan(0);
        }
      }
    },
    TIMEOUT_MS,
  );
});
