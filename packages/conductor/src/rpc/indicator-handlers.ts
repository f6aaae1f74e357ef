import { toHardwareComponent, toIndicatorState, UnsupportedDriverExtension } from '@bmaas/common';
import type { ManagementInterface, Task } from '@bmaas/driver-api';
import type { TaskManager } from '../task-manager.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';
import { optionalString, requireString } from './params.js';

type IndicatorMethods = 'get_supported_indicators' | 'get_indicator_state' | 'set_indicator_state';

type IndicatorKey = 'getSupportedIndicators' | 'getIndicatorState' | 'setIndicatorState';

/**
 * The management interface's indicators (LEDs), as Ironic's
 * get_supported_indicators, get_indicator_state and set_indicator_state:
 * each after the interface's validate(); reads under a shared lock. A
 * management interface without the method answers UnsupportedDriverExtension.
 */
export function createIndicatorHandlers(tasks: TaskManager): Pick<ConductorRpcHandlers, IndicatorMethods> {
  const withIndicators = <K extends IndicatorKey, T>(
    params: object,
    lock: { shared: boolean; purpose: string; requestId: string },
    key: K,
    extension: IndicatorMethods,
    use: (method: NonNullable<ManagementInterface[K]>, task: Task) => Promise<T>,
  ): Promise<T> =>
    tasks.withTask(requireString(params, 'node_id'), lock, async (task) => {
      const { management } = task.driver;
      const method = management[key];
      if (!method) throw new UnsupportedDriverExtension(task.node.driver, extension);
      await management.validate(task);
      return use(method.bind(management) as NonNullable<ManagementInterface[K]>, task);
    });

  return {
    async get_supported_indicators(params, { requestId }) {
      const given = optionalString(params, 'component');
      const component = given === undefined ? undefined : toHardwareComponent(given);
      const lock = { shared: true, purpose: 'getting supported indicators', requestId };
      return withIndicators(params, lock, 'getSupportedIndicators', 'get_supported_indicators', (list, task) =>
        list(task, component),
      );
    },

    async get_indicator_state(params, { requestId }) {
      const component = toHardwareComponent(requireString(params, 'component'));
      const indicator = requireString(params, 'indicator');
      const lock = { shared: true, purpose: 'getting indicator state', requestId };
      return withIndicators(params, lock, 'getIndicatorState', 'get_indicator_state', (get, task) =>
        get(task, component, indicator),
      );
    },

    async set_indicator_state(params, { requestId }) {
      const component = toHardwareComponent(requireString(params, 'component'));
      const indicator = requireString(params, 'indicator');
      const state = toIndicatorState(requireString(params, 'state'));
      const lock = { shared: false, purpose: 'setting indicator state', requestId };
      await withIndicators(params, lock, 'setIndicatorState', 'set_indicator_state', async (set, task) => {
        await set(task, component, indicator, state);
        task.logger.info('indicator state set', { component, indicator, state });
      });
      return null;
    },
  };
}
