import { PowerState as Power, type PowerState } from '@bmaas/common';
import type { InterfaceDescriptor, PowerInterface } from '../interfaces.js';
import type { Task } from '../task.js';

/** Power that only records the state on the node: succeeds at once. */
export class FakePowerInterface implements PowerInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  /** What was last set, as Ironic's fake power: null until something sets it. */
  async getPowerState(task: Task): Promise<PowerState | null> {
    return task.node.powerState as PowerState | null;
  }

  async setPowerState(task: Task, state: PowerState): Promise<void> {
    const settled =
      state === Power.REBOOT || state === Power.SOFT_REBOOT
        ? Power.ON
        : state === Power.SOFT_POWER_OFF
          ? Power.OFF
          : state;
    await task.updateNode({ powerState: settled, targetPowerState: null });
  }
}

export const fakePowerInterface: InterfaceDescriptor<PowerInterface> = {
  name: 'fake',
  create: () => new FakePowerInterface(),
};
