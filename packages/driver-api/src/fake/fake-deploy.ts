import type { DeployInterface, InterfaceDescriptor, StepOutcome } from '../interfaces.js';
import type { Task } from '../task.js';

/** Deploy and clean steps that finish at once, never waiting for an agent. */
export class FakeDeployInterface implements DeployInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async deploy(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async continueDeploy(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async tearDown(_task: Task): Promise<void> {}

  async prepareCleaning(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async continueCleaning(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async tearDownCleaning(_task: Task): Promise<void> {}

  async takeOver(_task: Task): Promise<void> {}
}

export const fakeDeployInterface: InterfaceDescriptor<DeployInterface> = {
  name: 'fake',
  create: () => new FakeDeployInterface(),
};
