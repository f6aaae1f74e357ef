import { InvalidParameterValue } from '@bmaas/common';
import { BOOT_DEVICES, type BootDevice } from '@bmaas/driver-api';
import type { TaskManager } from '../task-manager.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';
import { requireString } from './params.js';

type ManagementMethods = 'set_boot_device' | 'get_boot_device' | 'get_supported_boot_devices' | 'inject_nmi';

function bootDeviceParam(params: object): BootDevice {
  const device = requireString(params, 'device');
  if (!(BOOT_DEVICES as readonly string[]).includes(device)) {
    throw new InvalidParameterValue(`Invalid boot device ${device}, known: ${BOOT_DEVICES.join(', ')}.`, { device });
  }
  return device as BootDevice;
}

/** The management interface's methods: boot device and NMI, each after the interface's validate(). */
export function createManagementHandlers(tasks: TaskManager): Pick<ConductorRpcHandlers, ManagementMethods> {
  return {
    async set_boot_device(params, { requestId }) {
      const device = bootDeviceParam(params);
      const persistent = params.persistent === true;
      await tasks.withTask(
        requireString(params, 'node_id'),
        { purpose: 'setting boot device', requestId },
        async (task) => {
          const { management } = task.driver;
          await management.validate(task);
          const supported = await management.getSupportedBootDevices(task);
          if (!supported.includes(device)) {
            throw new InvalidParameterValue(
              `Boot device ${device} is not supported by node ${task.node.uuid} (supported: ${supported.join(', ')}).`,
            );
          }
          await management.setBootDevice(task, device, persistent);
        },
      );
      return null;
    },

    async get_boot_device(params, { requestId }) {
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'getting boot device', requestId },
        async (task) => {
          await task.driver.management.validate(task);
          const state = await task.driver.management.getBootDevice(task);
          return { boot_device: state.bootDevice, persistent: state.persistent };
        },
      );
    },

    async get_supported_boot_devices(params, { requestId }) {
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'getting supported boot devices', requestId },
        (task) => task.driver.management.getSupportedBootDevices(task),
      );
    },

    async inject_nmi(params, { requestId }) {
      await tasks.withTask(requireString(params, 'node_id'), { purpose: 'inject nmi', requestId }, async (task) => {
        await task.driver.management.validate(task);
        await task.driver.management.injectNmi(task);
      });
      return null;
    },
  };
}
