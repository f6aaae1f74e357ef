import type { HealthState } from '@bmaas/common';

const RANK: Record<HealthState, number> = { OK: 0, Warning: 1, Critical: 2 };

/** The worse of two health states. */
export function worseHealth(a: HealthState, b: HealthState): HealthState {
  return RANK[b] > RANK[a] ? b : a;
}

/** `chassis status` lines whose `true` is a fault, and what it makes the node. */
const CHASSIS_FAULTS: ReadonlyArray<[RegExp, HealthState]> = [
  [/^Main Power Fault\s*:\s*true/im, 'Critical'],
  [/^Power Control Fault\s*:\s*true/im, 'Critical'],
  [/^Power Overload\s*:\s*true/im, 'Critical'],
  [/^Drive Fault\s*:\s*true/im, 'Warning'],
  [/^Cooling\/Fan Fault\s*:\s*true/im, 'Warning'],
];

/**
 * Health from `ipmitool chassis status`: a power fault (main power, power
 * control, overload) is Critical, a drive or cooling fault a Warning.
 */
export function healthFromChassisStatus(stdout: string): HealthState {
  let health: HealthState = 'OK';
  for (const [line, state] of CHASSIS_FAULTS) if (line.test(stdout)) health = worseHealth(health, state);
  return health;
}

/**
 * Health from `ipmitool sdr elist`: each threshold sensor's state, in the
 * table's third column (`nc`, `lnc`, `unc`: a non-critical threshold
 * crossed; `cr`, `lcr`, `ucr`, `nr`, `lnr`, `unr`: a critical or
 * non-recoverable one; `ok`, `ns`: none) or, with `-v` (which the runner
 * always passes), as `Status : Upper Non-Critical`, `Lower Critical`,
 * `Upper Non-Recoverable`, `ok`. Non-critical is a Warning, critical and
 * non-recoverable Critical.
 */
export function healthFromSensors(stdout: string): HealthState {
  let health: HealthState = 'OK';
  for (const line of stdout.split('\n')) {
    const verbose = /^\s*Status\s*:\s*(.*)$/i.exec(line)?.[1];
    const status = (verbose ?? line.split('|')[2])?.trim().toLowerCase();
    if (status === undefined) continue;
    if (/^[lu]?(cr|nr)$|^(lower|upper) (critical|non-recoverable)$/.test(status)) {
      health = worseHealth(health, 'Critical');
    } else if (/^[lu]?nc$|^(lower|upper) non-critical$/.test(status)) {
      health = worseHealth(health, 'Warning');
    }
  }
  return health;
}
