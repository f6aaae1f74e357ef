import type { PeriodicTask } from './periodic-task.js';

/** Prunes node history ([conductor]node_history_cleanup_interval; 0 = never). */
export const nodeHistoryCleanupTask: PeriodicTask = {
  name: 'node history cleanup',
  intervalSeconds: (config) => config.conductor.node_history_cleanup_interval,
  runAtStart: false,
  onDemand: false,
  async run({ stores, config, logger }) {
    const pruned = await stores.nodeHistory.prune({
      maxEntries: config.node_history_max_entries,
      minimumDays: config.node_history_minimum_days,
      batchCount: config.node_history_cleanup_batch_count,
    });
    if (pruned > 0) logger.info('node history pruned', { entries: pruned });
  },
};
