import type { DeployInterface, InterfaceDescriptor, StepOutcome, UserStep } from '../interfaces.js';
import type { Task } from '../task.js';

/** driver_internal_info key listing the service steps the fake ran (`interface.step`), oldest first. */
export const FAKE_SERVICE_STEPS_KEY = 'fake_service_steps';

/** Deploy, clean and service steps that finish at once, never waiting for an agent. */
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

  /** Any service step completes at once; the fake records which ran. */
  async executeServiceStep(task: Task, step: UserStep): Promise<StepOutcome> {
    const ran = task.node.driverInternalInfo[FAKE_SERVICE_STEPS_KEY];
    const steps = Array.isArray(ran) ? ran : [];
    await task.updateNode({
      driverInternalInfo: {
        ...task.node.driverInternalInfo,
        [FAKE_SERVICE_STEPS_KEY]: [...steps, `${step.interface}.${step.step}`],
      },
    });
    return 'done';
  }
}

export const fakeDeployInterface: InterfaceDescriptor<DeployInterface> = {
  name: 'fake',
  create: () => new FakeDeployInterface(),
};
