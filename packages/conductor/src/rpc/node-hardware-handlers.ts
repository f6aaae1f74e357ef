import {
  InvalidParameterValue,
  TemporaryFailure,
  UnsupportedDriverExtension,
  VMEDIA_DEVICES,
  type VmediaDevice,
} from '@bmaas/common';
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
  | 'set_secure_boot_state'
  | 'attach_virtual_media'
  | 'detach_virtual_media'
  | 'get_virtual_media';

function nodeId(params: { node_id?: unknown }): string {
  if (typeof params.node_id !== 'string' || params.node_id === '') {
    throw new InvalidParameterValue('Parameter node_id must be a non-empty string.', { parameter: 'node_id' });
  }
  return params.node_id;
}

function vmediaDevices(value: unknown): VmediaDevice[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((d) => (VMEDIA_DEVICES as readonly unknown[]).includes(d))) {
    throw new InvalidParameterValue(`Invalid device type(s) (valid are ${VMEDIA_DEVICES.join(', ')}).`);
  }
  return value as VmediaDevice[];
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Starts a virtual media change as Ironic's conductor does: the management
 * interface must offer it and validate; a node in maintenance after a power
 * failure is refused; last_error is cleared and the change runs in the
 * background, its failure recorded in last_error.
 */
async function startVmediaChange(
  task: ConductorTask,
  extension: 'attach_virtual_media' | 'detach_virtual_media',
  what: string,
  change: (task: ConductorTask) => Promise<void>,
): Promise<void> {
  const management = task.driver.management;
  const method = extension === 'attach_virtual_media' ? management.attachVirtualMedia : management.detachVirtualMedia;
  if (!method) throw new UnsupportedDriverExtension(task.node.driver, extension);
  await management.validate(task);
  if (task.node.maintenance && task.node.fault === 'power failure') {
    throw new TemporaryFailure(`Unable to ${what} for node ${task.node.uuid} due to power failure state`);
  }
  await task.updateNode({ lastError: null });
  task.spawnAfter(async (t) => {
    try {
      await change(t);
      t.logger.info(`${what} done`);
    } catch (error) {
      t.logger.warn(`${what} failed`, { error: message(error) });
      await t.updateNode({ lastError: `Could not ${what} on node ${t.node.uuid}: ${message(error)}` });
    }
  });
}

/**
 * The conductor's side of the node sub-resources that act on hardware: VIFs
 * (network interface), target RAID (raid), vendor passthru (vendor), console
 * (console), boot mode, secure boot and virtual media (management). Each runs the node's
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

    async attach_virtual_media(params, { requestId }) {
      const [device] = vmediaDevices([params.device_type]) ?? [];
      const imageUrl = params.image_url;
      if (typeof imageUrl !== 'string' || imageUrl === '') throw new InvalidParameterValue('An image URL is required.');
      await exclusive(params, 'attaching virtual media', requestId, (task) =>
        // The method's presence is checked before the change starts.
        startVmediaChange(task, 'attach_virtual_media', `attach device ${device}`, async (t) => {
          await t.driver.management.attachVirtualMedia?.(t, device as VmediaDevice, imageUrl);
        }),
      );
      return null;
    },

    async detach_virtual_media(params, { requestId }) {
      const devices = vmediaDevices(params.device_types);
      const named = devices?.length ? devices.join(', ') : 'all devices';
      await exclusive(params, 'detaching virtual media', requestId, (task) =>
        startVmediaChange(task, 'detach_virtual_media', `detach ${named}`, async (t) => {
          await t.driver.management.detachVirtualMedia?.(t, devices?.length ? devices : undefined);
        }),
      );
      return null;
    },

    async get_virtual_media(params, { requestId }) {
      return shared(params, 'get virtual media devices', requestId, async (task) => {
        const management = task.driver.management;
        if (!management.getVirtualMedia) throw new UnsupportedDriverExtension(task.node.driver, 'get_virtual_media');
        await management.validate(task);
        return management.getVirtualMedia(task);
      });
    },
  };
  return handlers;
}
