import { BootConfigNotFound } from '@bmaas/common';
import type { BootInterfaceDescriptor } from '../boot.js';
import { BaseBootInterface, type RamdiskMode } from '../boot.js';
import type { Task } from '../task.js';

/** Name of the one configuration the fake serves. */
export const FAKE_BOOT_CONFIG_NAME = 'boot.fake';

/**
 * A boot interface that succeeds at once and boots nothing. It records what
 * it prepared in driver_internal_info so tests can see the calls, and serves
 * a small text config (`boot.fake`) for nodes with a prepared ramdisk.
 */
export class FakeBootInterface extends BaseBootInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, fake_boot: `ramdisk:${mode}` } });
  }

  async cleanUpRamdisk(task: Task): Promise<void> {
    await this.clear(task);
  }

  async prepareInstance(task: Task): Promise<void> {
    await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, fake_boot: 'instance' } });
  }

  async cleanUpInstance(task: Task): Promise<void> {
    await this.clear(task);
  }

  override async getBootConfig(task: Task, name: string): Promise<string> {
    const prepared = task.node.driverInternalInfo.fake_boot;
    if (name !== FAKE_BOOT_CONFIG_NAME || typeof prepared !== 'string') {
      throw new BootConfigNotFound(task.node.uuid, name);
    }
    return `fake boot config for ${task.node.uuid}: ${prepared}\n`;
  }

  private async clear(task: Task): Promise<void> {
    if (!('fake_boot' in task.node.driverInternalInfo)) return;
    const { fake_boot: _, ...rest } = task.node.driverInternalInfo;
    await task.updateNode({ driverInternalInfo: rest });
  }
}

/** What the fake's `boot.fake` boots (`…: ramdisk:deploy`, `…: instance`), for the contract suite. */
export function fakeBootTarget(config: string): 'deploy' | 'rescue' | 'instance' | 'ambiguous' {
  const prepared = /: (ramdisk:deploy|ramdisk:rescue|instance)$/m.exec(config)?.[1];
  return prepared === undefined ? 'ambiguous' : (prepared.replace('ramdisk:', '') as 'deploy' | 'rescue' | 'instance');
}

export const fakeBootInterface: BootInterfaceDescriptor = {
  name: 'fake',
  rootFiles: [],
  bootConfigNames: [FAKE_BOOT_CONFIG_NAME],
  discoveryConfigNames: [],
  textFiles: [],
  networkBoot: false,
  create: () => new FakeBootInterface(),
};
