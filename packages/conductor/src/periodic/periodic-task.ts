import type { BmaasConfig } from '@bmaas/common';
import type { AllocationProcessor } from '../allocations/allocation-processor.js';
import type { ConductorMetrics } from '../metrics/conductor-metrics.js';
import type { NodeCheckDeps } from './node-checks.js';
import type { PowerStateSync } from './power-sync.js';
import type { TakeoverCheck } from './takeover.js';

/** What a periodic task runs with: the node checks' deps and the conductor's parts a task drives. */
export interface PeriodicTaskDeps extends NodeCheckDeps {
  metrics: ConductorMetrics;
  /** Refreshes this conductor's heartbeat; registers it again when its row is gone. */
  heartbeat(): Promise<void>;
  takeover: TakeoverCheck;
  /** Shared by the power state sync and the power failure recovery (it counts failed reads per node). */
  powerSync: PowerStateSync;
  /** Processes allocations; the periodic task adopts dead conductors' ones. */
  allocations: AllocationProcessor;
}

/**
 * One of the conductor's periodic tasks (Ironic's @periodic). The composition
 * root starts every task of PERIODIC_TASKS with its interval, and stops them
 * before it drains its work.
 */
export interface PeriodicTask {
  readonly name: string;
  /** Seconds between runs, from the configuration; 0 = the task does not run. */
  intervalSeconds(config: BmaasConfig): number;
  /** First run at start rather than one interval later. */
  readonly runAtStart: boolean;
  /** Run by the conductor's runPeriodicChecks() (the checks tests trigger by hand). */
  readonly onDemand: boolean;
  /** One run; a failure is logged and the next run comes at the next interval. */
  run(deps: PeriodicTaskDeps): Promise<void>;
}
