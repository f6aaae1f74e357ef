import type { DeployInterface, InterfaceDescriptor, ProvisionStep, StepOutcome, UserStep } from '../interfaces.js';
import type { Task } from '../task.js';

/** driver_internal_info key listing the service steps the fake ran (`interface.step`), oldest first. */
export const FAKE_SERVICE_STEPS_KEY = 'fake_service_steps';

/** Deploy steps that finish at once, clean and service steps too. Never waits for an agent. */
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
