import type { PeriodicTask } from './periodic-task.js';
import { SYNC_TICKS_PER_INTERVAL } from './power-sync.js';

/** Reads the power state of every owned node and records changes made outside the service (a tick; see PowerStateSync). */
export const powerSyncTask: PeriodicTask = {
  name: 'sync power states',
  intervalSeconds: (config) => config.conductor.sync_power_state_interval / SYNC_TICKS_PER_INTERVAL,
  runAtStart: false,
  onDemand: false,
  run: ({ powerSync }) => powerSync.syncPowerStates(),
};
