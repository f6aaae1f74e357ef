import type { PeriodicTask } from './periodic-task.js';

/**
 * Adopts the allocations dead conductors left in `allocating` and processes
 * them (Ironic's _check_orphan_allocations, [conductor]check_allocations_interval).
 */
export const allocationsTask: PeriodicTask = {
  name: 'check allocations',
  intervalSeconds: (config) => config.conductor.check_allocations_interval,
  runAtStart: false,
  onDemand: true,
  async run({ allocations }) {
    await allocations.adoptOrphans();
  },
};
