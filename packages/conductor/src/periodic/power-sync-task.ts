import type { PeriodicTask } from './periodic-task.js';

/** Reads the power state of every owned node and records changes made outside the service. */
export const powerSyncTask: PeriodicTask = {
  name: 'sync power states',
  intervalSeconds: (config) => config.conductor.sync_power_state_interval,
  runAtStart: false,
  onDemand: false,
  run: ({ powerSync }) => powerSync.syncPowerStates(),
};
