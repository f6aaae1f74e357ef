import { InvalidParameterValue, UnsupportedDriverExtension } from '@bmaas/common';
import type { ConductorTask, TaskManager } from '../task-manager.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';

type HardwareMethods =
  | 'vif_attach'
  | 'vif_detach'
  | 'vif_list'
  | 'set_target_raid_config'
  | 'get_node_vendor_passthru_methods'
  | 'vendor_passthru'
  | 'set_console_mode'
  | 'get_console_information'
  | 'set_boot_mode'
  | 'set_secure_boot_state';

function nodeId(params: { node_id?: unknown }): string {
  if (typeof params.node_id !== 'string' || params.node_id === '') {
    throw new InvalidParameterValue('Parameter node_id must be a non-empty string.', { parameter: 'node_id' });
  }
  return params.node_id;
}

/**
 * The conductor's side of the node sub-resources that act on hardware: VIFs
 * (network interface), target RAID (raid), vendor passthru (vendor), console
 * (console), boot mode and secure boot (management). Each runs the node's
 * own interface under the node's lock, as Ironic's conductor does.
 */
export function createNodeHardwareHandlers(tasks: TaskManager): Pick<ConductorRpcHandlers, HardwareMethods> {
  const exclusive = <T>(
    params: { node_id?: unknown },
    purpose: string,
    requestId: string,
    fn: (task: ConductorTask) => Promise<T>,
  ) => tasks.withTask(nodeId(params), { purpose, requestId }, fn);
  const shared = <T>(
    params: { node_id?: unknown },
    purpose: string,
    requestId: string,
    fn: (task: ConductorTask) => Promise<T>,
  ) => tasks.withTask(nodeId(params), { shared: true, purpose, requestId }, fn);

  const handlers: Pick<ConductorRpcHandlers, HardwareMethods> = {
    async vif_attach(params, { requestId }) {
      const vif = params.vif_info;
      if (typeof vif?.id !== 'string' || vif.id === '') throw new InvalidParameterValue('VIF id is required.');
      await exclusive(params, 'attach vif', requestId, (task) => task.driver.network.vifAttach(task, vif));
      return null;
    },

    async vif_detach(params, { requestId }) {
      await exclusive(params, 'detach vif', requestId, (task) => task.driver.network.vifDetach(task, params.vif_id));
      return null;
    },

    async vif_list(params, { requestId }) {
      return shared(params, 'list vifs', requestId, (task) => task.driver.network.vifList(task));
    },

    async set_target_raid_config(params, { requestId }) {
      const config = params.target_raid_config;
      if (typeof config !== 'object' || config === null || Array.isArray(config)) {
        throw new InvalidParameterValue('The RAID configuration must be a JSON object.');
      }
      await exclusive(params, 'set target raid config', requestId, async (task) => {
        // Ironic validates only a configuration that is not empty: {} clears the target on any interface.
        if (Object.keys(config).length > 0) await task.driver.raid.validateRaidConfig(task, config);
        await task.updateNode({ targetRaidConfig: config });
      });
      return null;
    },

    async get_node_vendor_passthru_methods(params, { requestId }) {
      return shared(params, 'list vendor methods', requestId, async (task) => task.driver.vendor.methods());
    },

    async vendor_passthru(params, { requestId }) {
      return exclusive(params, 'vendor passthru', requestId, async (task) => {
        const method = task.driver.vendor.methods()[params.driver_method];
        const result = await task.driver.vendor.passthru(
          task,
          params.driver_method,
          params.http_method,
          params.info ?? {},
        );
        return { return: result, async: method?.async ?? false };
      });
    },

    async set_console_mode(params, { requestId }) {
      const enabled = params.enabled === true;
      await exclusive(params, 'set console mode', requestId, async (task) => {
        await task.driver.console.validate(task);
        if (task.node.consoleEnabled === enabled) return;
        if (enabled) await task.driver.console.startConsole(task);
        else await task.driver.console.stopConsole(task);
        await task.updateNode({ consoleEnabled: enabled });
      });
      return null;
    },

    async get_console_information(params, { requestId }) {
      return shared(params, 'get console information', requestId, async (task) => {
        if (!task.node.consoleEnabled) return { console_enabled: false, console_info: null };
        await task.driver.console.validate(task);
        return { console_enabled: true, console_info: await task.driver.console.getConsole(task) };
      });
    },

    async set_boot_mode(params, { requestId }) {
      const mode = params.mode;
      if (mode !== 'bios' && mode !== 'uefi') throw new InvalidParameterValue(`Invalid boot mode: ${String(mode)}`);
      await exclusive(params, 'set boot mode', requestId, async (task) => {
        const management = task.driver.management;
        if (!management.setBootMode) throw new UnsupportedDriverExtension(task.node.driver, 'set_boot_mode');
        await management.validate(task);
        await management.setBootMode(task, mode);
        await task.updateNode({ bootMode: mode });
      });
      return null;
    },

    async set_secure_boot_state(params, { requestId }) {
      if (typeof params.state !== 'boolean')
        throw new InvalidParameterValue('The secure boot state must be a boolean.');
      const state = params.state;
      await exclusive(params, 'set secure boot state', requestId, async (task) => {
        const management = task.driver.management;
        if (!management.setSecureBootState) {
          throw new UnsupportedDriverExtension(task.node.driver, 'set_secure_boot_state');
        }
        await management.validate(task);
        await management.setSecureBootState(task, state);
        await task.updateNode({ secureBoot: state });
      });
      return null;
    },
  };
  return handlers;
}
