import { UnsupportedDriverExtension } from '@bmaas/common';
import {
  BOOT_DEVICES,
  type BootDevice,
  type BootDeviceState,
  type InterfaceDescriptor,
  type ManagementInterface,
} from './interfaces.js';
import type { Task } from './task.js';

/**
 * Ironic's `noop` management: nothing to drive, a person sets the boot
 * device (manual-management hardware type). Setting one is accepted and
 * logged so deploy can go on; reading it says "unknown".
 */
export class NoopManagementInterface implements ManagementInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async getSupportedBootDevices(_task: Task): Promise<BootDevice[]> {
    return [...BOOT_DEVICES];
  }

  async setBootDevice(task: Task, device: BootDevice, persistent: boolean): Promise<void> {
    task.logger.info('boot device to be set by hand (noop management)', { device, persistent });
  }

  async getBootDevice(_task: Task): Promise<BootDeviceState> {
    return { bootDevice: null, persistent: null };
  }

  async injectNmi(task: Task): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'inject_nmi');
  }
}

export const noopManagementInterface: InterfaceDescriptor<ManagementInterface> = {
  name: 'noop',
  create: () => new NoopManagementInterface(),
};
