// A machine that exists only in memory: the backend of a service that has no QEMU behind it.
// It records every boot (device and mode), so a test sees what a real machine would have booted.
import {
  BOOT_SOURCES,
  type BootMode,
  type BootRequest,
  type BootSource,
  type MachinePower,
  RESET_TYPES,
  type RedfishPowerState,
  type ResetType,
} from './machine-power.js';
import { SimulatedCdDrive } from './virtual-media.js';

export interface SimulatedPowerOptions {
  /** Initial power state; default Off. */
  powerState?: RedfishPowerState;
  /** Default every reset type. */
  resetTypes?: readonly ResetType[];
  /** Default both. */
  bootModes?: readonly BootMode[];
  /** Default every source of BOOT_SOURCES. */
  bootSources?: readonly BootSource[];
}

export class SimulatedMachinePower implements MachinePower {
  readonly resetTypes: readonly ResetType[];
  readonly bootModes: readonly BootMode[];
  readonly bootSources: readonly BootSource[];
  /** Every boot (device, mode, HTTP boot URI), oldest first; a CD boot with the image file in the drive. */
  readonly boots: Array<BootRequest & { cdImage?: string | undefined }> = [];
  /** Its CD drive: the image file the virtual CD put in, if any. */
  readonly cdDrive = new SimulatedCdDrive();
  /** How many NMIs the machine got. */
  nmis = 0;
  private state: RedfishPowerState;

  constructor(options: SimulatedPowerOptions = {}) {
    this.state = options.powerState ?? 'Off';
    this.resetTypes = options.resetTypes ?? RESET_TYPES;
    this.bootModes = options.bootModes ?? ['UEFI', 'Legacy'];
    this.bootSources = options.bootSources ?? BOOT_SOURCES;
  }

  async powerState(): Promise<RedfishPowerState> {
    return this.state;
  }

  async reset(type: ResetType, boot: BootRequest): Promise<void> {
    switch (type) {
      case 'On':
      case 'ForceOn':
        if (this.state === 'Off') this.boot(boot);
        break;
      case 'ForceOff':
      case 'GracefulShutdown':
        this.state = 'Off';
        break;
      case 'PushPowerButton':
        if (this.state === 'On') this.state = 'Off';
        else this.boot(boot);
        break;
      case 'ForceRestart':
      case 'GracefulRestart':
        if (this.state === 'On') this.boot(boot);
        break;
      case 'PowerCycle':
        this.boot(boot);
        break;
      case 'Nmi':
        if (this.state === 'On') this.nmis += 1;
        break;
    }
  }

  private boot(boot: BootRequest): void {
    this.state = 'On';
    this.boots.push({ ...boot, ...(boot.target === 'Cd' ? { cdImage: this.cdDrive.medium } : {}) });
  }
}
