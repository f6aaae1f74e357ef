import type { InterfaceDescriptor, ManagementInterface } from '../interfaces.js';
import type { Task } from '../task.js';

/** Management that remembers the boot device in driver_internal_info. */
export class FakeManagementInterface implements ManagementInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async setBootDevice(task: Task, device: 'pxe' | 'disk', persistent: boolean): Promise<void> {
    await task.updateNode({
      driverInternalInfo: { ...task.node.driverInternalInfo, fake_boot_device: { device, persistent } },
    });
  }

  /** Any boot mode, as Ironic's fake management supports both. */
  async setBootMode(_task: Task, _mode: 'bios' | 'uefi'): Promise<void> {}

  async setSecureBootState(_task: Task, _enabled: boolean): Promise<void> {}
}

export const fakeManagementInterface: InterfaceDescriptor<ManagementInterface> = {
  name: 'fake',
  create: () => new FakeManagementInterface(),
};
