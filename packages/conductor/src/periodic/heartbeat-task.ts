import type { PeriodicTask } from './periodic-task.js';

/** Tells the other conductors and the API this conductor is alive ([conductor]heartbeat_interval). */
export const heartbeatTask: PeriodicTask = {
  name: 'heartbeat',
  intervalSeconds: (config) => config.conductor.heartbeat_interval,
  runAtStart: false,
  onDemand: true,
  async run({ heartbeat, metrics }) {
    try {
      await heartbeat();
    } catch (error) {
      metrics.heartbeatFailed();
      throw error;
    }
    metrics.heartbeatSent();
  },
};
