import { PowerState } from '@bmaas/common';
import type { InspectInterface, InterfaceDescriptor, StepOutcome, Task } from '@bmaas/driver-api';

/**
 * Ironic's built-in in-band inspection (`agent`): the node network-boots the
 * deploy ramdisk with `ipa-inspection-callback-url` on its command line and
 * waits in `inspect wait`; the ramdisk posts its inventory to
 * /v1/continue_inspection, the conductor processes it, then this interface
 * removes the ramdisk boot and powers the machine off.
 */
export class AgentInspectInterface implements InspectInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  /** The ramdisk images (driver_info) must be usable by the boot interface. */
  async validate(task: Task): Promise<void> {
    await task.driver.boot.validate(task);
  }

  async inspectHardware(task: Task): Promise<StepOutcome> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.prepareRamdisk(task, 'deploy');
    if (!task.driver.boot.setsBootDevice) await task.driver.management.setBootDevice(task, 'pxe', false);
    await task.driver.power.setPowerState(task, PowerState.ON);
    return 'wait';
  }

  async continueInspection(task: Task): Promise<void> {
    await this.tidyUp(task);
  }

  async abortInspection(task: Task): Promise<void> {
    await this.tidyUp(task);
  }

  private async tidyUp(task: Task): Promise<void> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
  }
}

export const agentInspectInterface: InterfaceDescriptor<AgentInspectInterface> = {
  name: 'agent',
  create: () => new AgentInspectInterface(),
};
