import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import type { InterfaceDescriptor, StepOutcome } from '../interfaces.js';
import type {
  BiosInterface,
  ConsoleInfo,
  ConsoleInterface,
  FirmwareInterface,
  InspectInterface,
  RaidConfig,
  RaidInterface,
  RescueInterface,
  StorageInterface,
  VendorInterface,
  VendorMethod,
} from '../optional-interfaces.js';
import type { Task } from '../task.js';
import { checkRaidConfig } from './raid-config.js';

/** Fake of any kind without actions of its own: nothing to read, always valid. */
class FakeValid {
  getProperties(): Record<string, string> {
    return {};
  }
  async validate(_task: Task): Promise<void> {}
}

/** A console that is always there and leads nowhere (Ironic's fake console). */
class FakeConsole extends FakeValid implements ConsoleInterface {
  async startConsole(_task: Task): Promise<void> {}
  async stopConsole(_task: Task): Promise<void> {}
  async getConsole(_task: Task): Promise<ConsoleInfo> {
    return { type: 'fake', url: 'fake://' };
  }
}

/** Inspection that finds nothing new and finishes at once (Ironic's fake inspect). */
class FakeInspect extends FakeValid implements InspectInterface {
  async inspectHardware(_task: Task): Promise<StepOutcome> {
    return 'done';
  }
  async continueInspection(_task: Task): Promise<void> {}
  async abortInspection(_task: Task): Promise<void> {}
}

/** RAID that accepts any configuration Ironic's RAID schema accepts. */
class FakeRaid extends FakeValid implements RaidInterface {
  async validateRaidConfig(_task: Task, config: RaidConfig): Promise<void> {
    checkRaidConfig(config);
  }
}

const FIRST_METHOD: VendorMethod = {
  http_methods: ['POST'],
  async: false,
  description: 'Answers the "bar" it is given.',
  attach: false,
  require_exclusive_lock: true,
};

/** Vendor passthru with one method, first_method, as Ironic's fake vendor has. */
class FakeVendor extends FakeValid implements VendorInterface {
  methods(): Record<string, VendorMethod> {
    return { first_method: FIRST_METHOD };
  }

  async passthru(_task: Task, method: string, httpMethod: string, data: Record<string, unknown>): Promise<unknown> {
    if (method !== 'first_method') {
      throw new InvalidParameterValue(`No handler for method ${method}`);
    }
    if (!FIRST_METHOD.http_methods.includes(httpMethod)) {
      throw new InvalidParameterValue(
        `The method ${method} does not support HTTP ${httpMethod}. Supported methods are: ${FIRST_METHOD.http_methods.join(', ')}.`,
      );
    }
    if (data.bar === undefined) throw new MissingParameterValue("Parameter 'bar' not passed to method 'first_method'.");
    return { bar: data.bar };
  }
}

const fakeValid = <I>(): InterfaceDescriptor<I> => ({ name: 'fake', create: () => new FakeValid() as I });

export const fakeBiosInterface: InterfaceDescriptor<BiosInterface> = fakeValid();
export const fakeFirmwareInterface: InterfaceDescriptor<FirmwareInterface> = fakeValid();
export const fakeInspectInterface: InterfaceDescriptor<InspectInterface> = {
  name: 'fake',
  create: () => new FakeInspect(),
};
export const fakeRescueInterface: InterfaceDescriptor<RescueInterface> = fakeValid();
export const fakeStorageInterface: InterfaceDescriptor<StorageInterface> = fakeValid();
export const fakeConsoleInterface: InterfaceDescriptor<ConsoleInterface> = {
  name: 'fake',
  create: () => new FakeConsole(),
};
export const fakeRaidInterface: InterfaceDescriptor<RaidInterface> = { name: 'fake', create: () => new FakeRaid() };
export const fakeVendorInterface: InterfaceDescriptor<VendorInterface> = {
  name: 'fake',
  create: () => new FakeVendor(),
};
