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

  /**
   * Records the state the hardware would settle in. There is no hardware to
   * wait for, so the record goes with the task's next write or the release
   * of its lock (writeWithNext): the caller reads it from `task.node` meanwhile.
   */
  async setPowerState(task: Task, state: PowerState): Promise<void> {
    const settled =
      state === Power.REBOOT || state === Power.SOFT_REBOOT
        ? Power.ON
        : state === Power.SOFT_POWER_OFF
          ? Power.OFF
          : state;
    task.writeWithNext({ powerState: settled, targetPowerState: null });
  }
}

export const fakePowerInterface: InterfaceDescriptor<PowerInterface> = {
  name: 'fake',
  create: () => new FakePowerInterface(),
};
