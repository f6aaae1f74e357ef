import type { DeployInterface, InterfaceDescriptor, ProvisionStep, StepOutcome, UserStep } from '../interfaces.js';
import type { Task } from '../task.js';

/** driver_internal_info key listing the service steps the fake ran (`interface.step`), oldest first. */
export const FAKE_SERVICE_STEPS_KEY = 'fake_service_steps';

/** driver_internal_info key listing the deploy steps the fake ran (`interface.step`), oldest first. */
export const FAKE_DEPLOY_STEPS_KEY = 'fake_deploy_steps';

/** The fake's deploy steps: the core step, and one that runs only when a user asks for it. */
export const FAKE_DEPLOY_STEPS: readonly ProvisionStep[] = [
  { interface: 'deploy', step: 'deploy', priority: 100, args: {} },
  { interface: 'deploy', step: 'write_marker', priority: 0, args: {} },
];

async function recordStep(task: Task, key: string, step: UserStep): Promise<void> {
  const ran = task.node.driverInternalInfo[key];
  const steps = Array.isArray(ran) ? ran : [];
  await task.updateNode({
    driverInternalInfo: { ...task.node.driverInternalInfo, [key]: [...steps, `${step.interface}.${step.step}`] },
  });
}

/**
 * Deploy steps that finish at once (and are recorded), clean and service
 * steps too; every clean step runs without a ramdisk. Never waits for an agent.
 */
export class FakeDeployInterface implements DeployInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async getDeploySteps(_task: Task): Promise<ProvisionStep[]> {
    return FAKE_DEPLOY_STEPS.map((step) => ({ ...step, args: {} }));
  }

  async executeDeployStep(task: Task, step: ProvisionStep): Promise<StepOutcome> {
    await recordStep(task, FAKE_DEPLOY_STEPS_KEY, step);
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

  async getCleanStepsWithoutRamdisk(_task: Task, requested: readonly ProvisionStep[]): Promise<ProvisionStep[]> {
    return requested.map((step) => ({ ...step, requires_ramdisk: false }));
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
    await recordStep(task, FAKE_SERVICE_STEPS_KEY, step);
    return 'done';
  }
}

export const fakeDeployInterface: InterfaceDescriptor<DeployInterface> = {
  name: 'fake',
  create: () => new FakeDeployInterface(),
};
