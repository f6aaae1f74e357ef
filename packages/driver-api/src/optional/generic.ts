import { UnsupportedDriverExtension } from '@bmaas/common';
import type { InterfaceDescriptor, StepOutcome } from '../interfaces.js';
import type {
  BiosInterface,
  ConsoleInfo,
  ConsoleInterface,
  FirmwareInterface,
  InspectInterface,
  NetworkInterface,
  RaidInterface,
  RescueInterface,
  StorageInterface,
  VendorInterface,
  VendorMethod,
  VifInfo,
} from '../optional-interfaces.js';
import type { Task } from '../task.js';

/**
 * "Nothing here" (Ironic's FailMixin): no properties, and validate and every
 * action throw UnsupportedDriverExtension naming the node's driver and the kind.
 */
class Unsupported {
  constructor(private readonly kind: string) {}

  getProperties(): Record<string, string> {
    return {};
  }

  async validate(task: Task): Promise<void> {
    this.fail(task);
  }

  protected fail(task: Task): never {
    throw new UnsupportedDriverExtension(task.node.driver, this.kind);
  }
}

class NoConsole extends Unsupported implements ConsoleInterface {
  async startConsole(task: Task): Promise<void> {
    this.fail(task);
  }
  async stopConsole(task: Task): Promise<void> {
    this.fail(task);
  }
  async getConsole(task: Task): Promise<ConsoleInfo> {
    this.fail(task);
  }
}

class NoInspect extends Unsupported implements InspectInterface {
  async inspectHardware(task: Task): Promise<StepOutcome> {
    this.fail(task);
  }
  async continueInspection(_task: Task): Promise<void> {}
  async abortInspection(_task: Task): Promise<void> {}
}

class NoRaid extends Unsupported implements RaidInterface {
  async validateRaidConfig(task: Task): Promise<void> {
    this.fail(task);
  }
}

class NoVendor extends Unsupported implements VendorInterface {
  methods(): Record<string, VendorMethod> {
    return {};
  }
  async passthru(task: Task): Promise<unknown> {
    this.fail(task);
  }
}

/** Ironic's noop network: validates, attaches nothing, lists nothing. */
export class NoopNetworkInterface implements NetworkInterface {
  getProperties(): Record<string, string> {
    return {};
  }
  async validate(_task: Task): Promise<void> {}
  async vifAttach(_task: Task, _vif: VifInfo): Promise<void> {}
  async vifDetach(_task: Task, _vifId: string): Promise<void> {}
  async vifList(_task: Task): Promise<VifInfo[]> {
    return [];
  }
}

/** Ironic's noop storage: no remote volumes, nothing to validate. */
class NoopStorage implements StorageInterface {
  getProperties(): Record<string, string> {
    return {};
  }
  async validate(_task: Task): Promise<void> {}
}

export const noBiosInterface: InterfaceDescriptor<BiosInterface> = {
  name: 'no-bios',
  create: () => new Unsupported('bios'),
};
export const noConsoleInterface: InterfaceDescriptor<ConsoleInterface> = {
  name: 'no-console',
  create: () => new NoConsole('console'),
};
export const noFirmwareInterface: InterfaceDescriptor<FirmwareInterface> = {
  name: 'no-firmware',
  create: () => new Unsupported('firmware'),
};
export const noInspectInterface: InterfaceDescriptor<InspectInterface> = {
  name: 'no-inspect',
  create: () => new NoInspect('inspect'),
};
export const noopNetworkInterface: InterfaceDescriptor<NetworkInterface> = {
  name: 'noop',
  create: () => new NoopNetworkInterface(),
};
export const noRaidInterface: InterfaceDescriptor<RaidInterface> = {
  name: 'no-raid',
  create: () => new NoRaid('raid'),
};
export const noRescueInterface: InterfaceDescriptor<RescueInterface> = {
  name: 'no-rescue',
  create: () => new Unsupported('rescue'),
};
export const noopStorageInterface: InterfaceDescriptor<StorageInterface> = {
  name: 'noop',
  create: () => new NoopStorage(),
};
export const noVendorInterface: InterfaceDescriptor<VendorInterface> = {
  name: 'no-vendor',
  create: () => new NoVendor('vendor'),
};
