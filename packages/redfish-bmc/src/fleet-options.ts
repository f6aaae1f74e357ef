// The simulated fleet's command line (fleet-main.js), as util.parseArgs reads it.
import { parseCommandLine, shareOption, UsageError, wholeNumber } from '@bmaas/common';
import { DEFAULT_FLEET_LATENCY, type RedfishFleetOptions } from './fleet.js';

export const FLEET_USAGE = `usage: fleet-main.js --count N [--first-address 127.1.0.1] [--port P]
                     [--median-ms 150] [--p99-ms 1000] [--max-ms 2000]
                     [--error-rate 0.002] [--timeout-rate 0.001] [--changes-per-minute N]
                     [--power-state On|Off]`;

const FLAGS = {
  count: { type: 'string' },
  'first-address': { type: 'string' },
  port: { type: 'string' },
  'median-ms': { type: 'string' },
  'p99-ms': { type: 'string' },
  'max-ms': { type: 'string' },
  'error-rate': { type: 'string' },
  'timeout-rate': { type: 'string' },
  'hang-ms': { type: 'string' },
  'changes-per-minute': { type: 'string' },
  'power-state': { type: 'string' },
} as const;

/** The fleet's options from its command line (UsageError when they cannot be understood). */
export function parseFleetOptions(argv: readonly string[]): RedfishFleetOptions {
  const values = parseCommandLine(argv, FLAGS, FLEET_USAGE);
  const count = wholeNumber('count', values.count, 1, 100_000);
  const ms = (flag: 'median-ms' | 'p99-ms' | 'max-ms' | 'hang-ms', fallback: number) =>
    values[flag] === undefined ? fallback : wholeNumber(flag, values[flag], 0, 600_000);
  const medianMs = ms('median-ms', DEFAULT_FLEET_LATENCY.medianMs);
  const latency = {
    medianMs,
    p99Ms: ms('p99-ms', Math.max(medianMs, DEFAULT_FLEET_LATENCY.p99Ms)),
    maxMs: ms('max-ms', Math.max(medianMs, DEFAULT_FLEET_LATENCY.maxMs)),
  };
  if (latency.medianMs < 1 || latency.p99Ms < latency.medianMs || latency.maxMs < latency.medianMs) {
    throw new UsageError(`latency: 1 ≤ median ≤ p99 and median ≤ max, got ${JSON.stringify(latency)}`);
  }
  const powerState = values['power-state'] ?? 'On';
  if (powerState !== 'On' && powerState !== 'Off') throw new UsageError('--power-state expects On or Off');
  return {
    count,
    latency,
    powerState,
    ...(values['first-address'] !== undefined ? { firstAddress: values['first-address'] } : {}),
    ...(values.port !== undefined ? { port: wholeNumber('port', values.port, 1, 65535) } : {}),
    ...(values['error-rate'] !== undefined ? { errorRate: shareOption('error-rate', values['error-rate']) } : {}),
    ...(values['timeout-rate'] !== undefined
      ? { timeoutRate: shareOption('timeout-rate', values['timeout-rate']) }
      : {}),
    ...(values['hang-ms'] !== undefined ? { hangMs: ms('hang-ms', 0) } : {}),
    ...(values['changes-per-minute'] !== undefined
      ? { changesPerMinute: wholeNumber('changes-per-minute', values['changes-per-minute'], 0, 1_000_000) }
      : {}),
  };
}
