import { UnsupportedDriverExtension } from '@bmaas/common';
import type { InspectInterface, InterfaceDescriptor, StepOutcome } from '../interfaces.js';
import type { Task } from '../task.js';

/** Inspection that finds nothing new and finishes at once, as Ironic's fake inspect interface. */
export class FakeInspectInterface implements InspectInterface {
  getProperties(): Record<string, string> {
    return {};
  }

  async validate(_task: Task): Promise<void> {}

  async inspectHardware(_task: Task): Promise<StepOutcome> {
    return 'done';
  }

  async continueInspection(_task: Task): Promise<void> {}

  async abortInspection(_task: Task): Promise<void> {}
}

/** No inspection at all: the inspect action is refused (Ironic's no-inspect). */
export class NoInspectInterface extends FakeInspectInterface {
  override async validate(task: Task): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'inspect');
  }

  override async inspectHardware(task: Task): Promise<StepOutcome> {
    throw new UnsupportedDriverExtension(task.node.driver, 'inspect');
  }
}

export const fakeInspectInterface: InterfaceDescriptor<InspectInterface> = {
  name: 'fake',
  create: () => new FakeInspectInterface(),
};

export const noInspectInterface: InterfaceDescriptor<InspectInterface> = {
  name: 'no-inspect',
  create: () => new NoInspectInterface(),
};
