import type { DeployInterface, InterfaceDescriptor, ProvisionStep, StepOutcome } from '../interfaces.js';
import type { Task } from '../task.js';

/** One deploy step that finishes at once; cleaning has nothing to do. Never waits for an agent. */
export class FakeDeployInterface implements DeployInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async getDeploySteps(_task: Task): Promise<ProvisionStep[]> {
    return [{ interface: 'deploy', step: 'deploy', priority: 100, args: {} }];
  }

  async executeDeployStep(_task: Task, _step: ProvisionStep): Promise<StepOutcome> {
    return 'done';
  }

  async checkDeployStep(_task: Task, _step: ProvisionStep): Promise<StepOutcome> {
    return 'done';
  }

  async tearDown(_task: Task): Promise<void> {}

  async prepareCleaning(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async getCleanSteps(_task: Task, requested: readonly ProvisionStep[] | undefined): Promise<ProvisionStep[]> {
    return [...(requested ?? [])];
  }

  async executeCleanStep(_task: Task, _step: ProvisionStep): Promise<StepOutcome> {
    return 'done';
  }

  async checkCleanStep(_task: Task, _step: ProvisionStep): Promise<StepOutcome> {
    return 'done';
  }

  async tearDownCleaning(_task: Task): Promise<void> {}

  async takeOver(_task: Task): Promise<void> {}
}

export const fakeDeployInterface: InterfaceDescriptor<DeployInterface> = {
  name: 'fake',
  create: () => new FakeDeployInterface(),
};
