import type { PeriodicTask } from './periodic-task.js';

/** Takes over the nodes the ring moved here, each time the hash ring is rebuilt, and at start. */
export const takeoverTask: PeriodicTask = {
  name: 'takeover',
  intervalSeconds: (config) => config.DEFAULT.hash_ring_reset_interval,
  runAtStart: true,
  onDemand: true,
  async run({ takeover, metrics }) {
    metrics.nodesTakenOver(await takeover.run());
  },
};
