import { loadConfig } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { PERIODIC_TASKS } from './periodic-tasks.js';

describe('PERIODIC_TASKS', () => {
  it('has one task per name, each with its interval from its own option', () => {
    const names = PERIODIC_TASKS.map((task) => task.name);
    expect(new Set(names).size).toBe(names.length);
    const config = loadConfig({
      env: {},
      overrides: {
        DEFAULT: { hash_ring_reset_interval: 7 },
        conductor: {
          heartbeat_interval: 2,
          check_provision_state_interval: 3,
          sync_power_state_interval: 12,
          power_failure_recovery_interval: 5,
          node_history_cleanup_interval: 6,
          check_allocations_interval: 8,
        },
      },
    });
    expect(Object.fromEntries(PERIODIC_TASKS.map((task) => [task.name, task.intervalSeconds(config)]))).toEqual({
      heartbeat: 2,
      'check provision states': 3,
      takeover: 7,
      // a tick: a sixth of the interval (PowerStateSync)
      'sync power states': 2,
      'power failure recovery': 5,
      'node history cleanup': 6,
      'check allocations': 8,
    });
  });

  it('turns history cleanup off with an interval of 0', () => {
    const config = loadConfig({ env: {}, overrides: { conductor: { node_history_cleanup_interval: 0 } } });
    const cleanup = PERIODIC_TASKS.find((task) => task.name === 'node history cleanup');
    expect(cleanup?.intervalSeconds(config)).toBe(0);
  });
});
