import { recoverOrphanedNodes } from './orphans.js';
import type { PeriodicTask } from './periodic-task.js';
import { failTimedOutWaits } from './wait-timeouts.js';

/**
 * Fails waits that outlasted their timeout and recovers nodes a dead
 * conductor left in a transient state. At start too: nodes this conductor
 * now owns may have been left so.
 */
export const provisionStateTask: PeriodicTask = {
  name: 'check provision states',
  intervalSeconds: (config) => config.conductor.check_provision_state_interval,
  runAtStart: true,
  onDemand: true,
  async run(deps) {
    await failTimedOutWaits(deps);
    await recoverOrphanedNodes(deps);
  },
};
