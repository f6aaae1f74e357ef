import { allocationsTask } from './allocations-task.js';
import { heartbeatTask } from './heartbeat-task.js';
import { nodeHistoryCleanupTask } from './node-history-cleanup-task.js';
import type { PeriodicTask } from './periodic-task.js';
import { powerFailureRecoveryTask } from './power-failure-recovery-task.js';
import { powerSyncTask } from './power-sync-task.js';
import { provisionStateTask } from './provision-state-task.js';
import { takeoverTask } from './takeover-task.js';

/**
 * Every periodic task of a conductor, in the order they start and, for the
 * on-demand ones, the order runPeriodicChecks() runs them. A new task is a
 * file beside these and one line here.
 */
export const PERIODIC_TASKS: readonly PeriodicTask[] = [
  heartbeatTask,
  provisionStateTask,
  takeoverTask,
  powerSyncTask,
  powerFailureRecoveryTask,
  nodeHistoryCleanupTask,
  allocationsTask,
];
