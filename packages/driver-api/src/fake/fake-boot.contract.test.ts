import { BaseBootInterface } from '../boot.js';
import type { Task } from '../task.js';
import { describeBootInterfaceContract } from '../testing/boot-interface-contract.js';
import { FAKE_BOOT_CONFIG_NAME, FakeBootInterface, fakeBootTarget } from './fake-boot.js';

describeBootInterfaceContract('fake', () => ({
  iface: new FakeBootInterface(),
  configName: FAKE_BOOT_CONFIG_NAME,
  bootTarget: fakeBootTarget,
}));

/** The fake without the get_boot_config extension, as an interface that keeps the base default. */
class FakeBootWithoutBootConfig extends FakeBootInterface {
  override getBootConfig(task: Task, name: string): Promise<string> {
    return BaseBootInterface.prototype.getBootConfig.call(this, task, name);
  }
}

describeBootInterfaceContract(
  'fake without get_boot_config',
  () => ({ iface: new FakeBootWithoutBootConfig(), configName: FAKE_BOOT_CONFIG_NAME }),
  { getBootConfig: 'unsupported' },
);
