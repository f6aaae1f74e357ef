import type { PeriodicTask } from './periodic-task.js';

/** Takes nodes out of maintenance for a power failure once their BMC answers again. */
export const powerFailureRecoveryTask: PeriodicTask = {
  name: 'power failure recovery',
  intervalSeconds: (config) => config.conductor.power_failure_recovery_interval,
  runAtStart: false,
  onDemand: false,
  run: ({ powerSync }) => powerSync.recoverPowerFailures(),
};
