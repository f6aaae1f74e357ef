import { toHardwareComponent, toIndicatorState, UnsupportedDriverExtension } from '@bmaas/common';
import type { ManagementInterface, Task } from '@bmaas/driver-api';
import type { TaskManager } from '../task-manager.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';
import { optionalString, requireString } from './params.js';

type IndicatorMethods = 'get_supported_indicators' | 'get_indicator_state' | 'set_indicator_state';

/** The management interface's indicator method, or UnsupportedDriverExtension when it has none. */
function indicatorMethod<K extends 'getSupportedIndicators' | 'getIndicatorState' | 'setIndicatorState'>(
  task: Task,
  key: K,
  extension: IndicatorMethods,
): NonNullable<ManagementInterface[K]> {
  const method = task.driver.management[key];
  if (!method) throw new UnsupportedDriverExtension(task.node.driver, extension);
  return method.bind(task.driver.management) as NonNullable<ManagementInterface[K]>;
}

/**
 * The management interface's indicators (LEDs), as Ironic's
 * get_supported_indicators, get_indicator_state and set_indicator_state:
 * each after the interface's validate(); reads under a shared lock.
 */
export function createIndicatorHandlers(tasks: TaskManager): Pick<ConductorRpcHandlers, IndicatorMethods> {
  return {
    async get_supported_indicators(params, { requestId }) {
      const component = optionalString(params, 'component');
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'getting supported indicators', requestId },
        async (task) => {
          const list = indicatorMethod(task, 'getSupportedIndicators', 'get_supported_indicators');
          await task.driver.management.validate(task);
          return list(task, component === undefined ? undefined : toHardwareComponent(component));
        },
      );
    },

    async get_indicator_state(params, { requestId }) {
      const component = toHardwareComponent(requireString(params, 'component'));
      const indicator = requireString(params, 'indicator');
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'getting indicator state', requestId },
        async (task) => {
          const get = indicatorMethod(task, 'getIndicatorState', 'get_indicator_state');
          await task.driver.management.validate(task);
          return get(task, component, indicator);
        },
      );
    },

    async set_indicator_state(params, { requestId }) {
      const component = toHardwareComponent(requireString(params, 'component'));
      const indicator = requireString(params, 'indicator');
      const state = toIndicatorState(requireString(params, 'state'));
      await tasks.withTask(
        requireString(params, 'node_id'),
        { purpose: 'setting indicator state', requestId },
        async (task) => {
          const set = indicatorMethod(task, 'setIndicatorState', 'set_indicator_state');
          await task.driver.management.validate(task);
          await set(task, component, indicator, state);
          task.logger.info('indicator state set', { component, indicator, state });
        },
      );
      return null;
    },
  };
}
