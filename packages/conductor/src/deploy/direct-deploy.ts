import { PowerState, ProvisionState as S } from '@bmaas/common';
import type { DeployInterface, InterfaceDescriptor, StepOutcome, Task } from '@bmaas/driver-api';
import type { RescueSteps } from './rescue-steps.js';

/** States whose next boot is the deploy ramdisk: a new owner must prepare it again. */
const NEEDS_DEPLOY_RAMDISK: ReadonlySet<string> = new Set([
  S.DEPLOYING,
  S.DEPLOY_WAIT,
  S.CLEANING,
  S.CLEAN_WAIT,
  S.INSPECTING,
  S.INSPECT_WAIT,
]);
const NEEDS_RESCUE_RAMDISK: ReadonlySet<string> = new Set([S.RESCUING, S.RESCUE_WAIT]);
const NEEDS_INSTANCE: ReadonlySet<string> = new Set([S.ACTIVE, S.ADOPTING]);

/**
 * Ironic's `direct` deploy: the node network-boots the deploy ramdisk, whose
 * agent writes the image and calls back (heartbeat); the conductor then
 * switches the node to boot its instance. Cleaning and rescue boot the
 * same way and wait for the agent too.
 */
export class DirectDeployInterface implements DeployInterface, RescueSteps {
  getProperties(): Record<string, string> {
    return {};
  }

  /** Images are the boot interface's business (it validates driver_info); nothing else to check here. */
  async validate(_task: Task): Promise<void> {}

  async deploy(task: Task): Promise<StepOutcome> {
    await task.driver.boot.prepareRamdisk(task, 'deploy');
    await this.networkBoot(task);
    return 'wait';
  }

  async continueDeploy(task: Task): Promise<StepOutcome> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
    await task.driver.boot.prepareInstance(task);
    await task.driver.management.setBootDevice(task, 'disk', true);
    await task.driver.power.setPowerState(task, PowerState.ON);
    return 'done';
  }

  async tearDown(task: Task): Promise<void> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpInstance(task);
  }

  async prepareCleaning(task: Task): Promise<StepOutcome> {
    await task.driver.boot.prepareRamdisk(task, 'deploy');
    await this.networkBoot(task);
    return 'wait';
  }

  async continueCleaning(task: Task): Promise<StepOutcome> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
    return 'done';
  }

  async tearDownCleaning(task: Task): Promise<void> {
    await task.driver.boot.cleanUpRamdisk(task);
  }

  async takeOver(task: Task): Promise<void> {
    const state = task.node.provisionState;
    if (NEEDS_DEPLOY_RAMDISK.has(state)) await task.driver.boot.prepareRamdisk(task, 'deploy');
    else if (NEEDS_RESCUE_RAMDISK.has(state)) await task.driver.boot.prepareRamdisk(task, 'rescue');
    else if (NEEDS_INSTANCE.has(state)) await task.driver.boot.prepareInstance(task);
  }

  async rescue(task: Task): Promise<StepOutcome> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.prepareRamdisk(task, 'rescue');
    await this.networkBoot(task);
    return 'wait';
  }

  async finishRescue(task: Task): Promise<void> {
    await task.driver.boot.cleanUpRamdisk(task);
  }

  async unrescue(task: Task): Promise<void> {
    await task.driver.power.setPowerState(task, PowerState.OFF);
    await task.driver.boot.cleanUpRamdisk(task);
    await task.driver.boot.prepareInstance(task);
    await task.driver.management.setBootDevice(task, 'disk', true);
    await task.driver.power.setPowerState(task, PowerState.ON);
  }

  /** Next boot from the network: reboot a running node, power on a stopped one. */
  private async networkBoot(task: Task): Promise<void> {
    await task.driver.management.setBootDevice(task, 'pxe', false);
    const current = await task.driver.power.getPowerState(task);
    await task.driver.power.setPowerState(task, current === PowerState.ON ? PowerState.REBOOT : PowerState.ON);
  }
}

export const directDeployInterface: InterfaceDescriptor<DirectDeployInterface> = {
  name: 'direct',
  create: () => new DirectDeployInterface(),
};
