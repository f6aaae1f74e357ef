// What stands behind one ComputerSystem of the service: the machine's power, as a backend.
// The service keeps everything else a BMC keeps (boot override, BIOS, firmware, health,
// inventory); a backend only reads and changes power, booting from the device it is handed.
import type { MachineCdDrive } from './virtual-media.js';

/** ComputerSystem.Reset's ResetType values (Resource.ResetType in the DMTF schema). */
export const RESET_TYPES = [
  'On',
  'ForceOff',
  'GracefulShutdown',
  'GracefulRestart',
  'ForceRestart',
  'Nmi',
  'ForceOn',
  'PushPowerButton',
  'PowerCycle',
] as const;
export type ResetType = (typeof RESET_TYPES)[number];

/** ComputerSystem.BootSource values this service offers for BootSourceOverrideTarget. */
export const BOOT_SOURCES = ['None', 'Pxe', 'Hdd', 'Cd', 'BiosSetup', 'UefiHttp'] as const;
export type BootSource = (typeof BOOT_SOURCES)[number];

export type BootMode = 'Legacy' | 'UEFI';
export type RedfishPowerState = 'On' | 'Off';

/** The device a power on boots from: the override when one is set, else the machine's own order. */
export interface BootRequest {
  /** `None`: the machine's own boot order. */
  target: BootSource;
  mode: BootMode;
  /** A `UefiHttp` boot's URI (Boot.HttpBootUri); absent: the one DHCP names. */
  httpBootUri?: string;
}

/**
 * The power of one machine. Every method may be slow (it talks to the machine) and throws
 * when the machine cannot be reached; the service answers such a failure with a 500.
 */
export interface MachinePower {
  /** Reset types this machine carries out; the service advertises exactly these. */
  readonly resetTypes: readonly ResetType[];
  /** Boot override targets the machine can boot from (`None` among them): advertised as allowable. */
  readonly bootSources: readonly BootSource[];
  /** Boot modes the machine's firmware has (a QEMU machine has the one it was started with). */
  readonly bootModes: readonly BootMode[];
  /** The machine's CD drive, where the virtual CD's image goes; absent: no virtual media. */
  readonly cdDrive?: MachineCdDrive;
  /** Whether the machine is on now, read from the machine. */
  powerState(): Promise<RedfishPowerState>;
  /**
   * Carries out a reset type (one of resetTypes). A reset that starts or restarts the machine
   * boots it from `boot`. Resolves when the machine has acted on it; a graceful shutdown or
   * restart only asks the guest.
   */
  reset(type: ResetType, boot: BootRequest): Promise<void>;
}

/**
 * Whether `type` (re)starts a machine that is `before`: a boot the boot override applies to and
 * pending BIOS settings take effect at. PushPowerButton on a running machine is a graceful
 * shutdown request; GracefulRestart counts as a restart (the guest is asked to reboot).
 */
export function resetBoots(type: ResetType, before: RedfishPowerState): boolean {
  switch (type) {
    case 'On':
    case 'ForceOn':
    case 'PushPowerButton':
      return before === 'Off';
    case 'ForceRestart':
    case 'GracefulRestart':
      return before === 'On';
    case 'PowerCycle':
      return true;
    default:
      return false;
  }
}
