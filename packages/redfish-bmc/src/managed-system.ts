// One ComputerSystem as its BMC keeps it: the hardware it reports, the boot override, the BIOS
// (current attributes and the pending settings applied at the next boot), the firmware
// inventory and the health; the machine's power comes from its backend (MachinePower).
import { randomUUID } from 'node:crypto';
import { type BiosAttributeRule, checkBiosValue, DEFAULT_BIOS_RULES } from './bios-registry.js';
import {
  type BootMode,
  type BootSource,
  type MachinePower,
  type RedfishPowerState,
  type ResetType,
  resetBoots,
} from './machine-power.js';
import { propertyUnknown, RedfishError, valueNotInList, valueTypeError } from './redfish-error.js';
import { VirtualCd, type VirtualMediaSettings } from './virtual-media.js';

export type BiosValue = string | number | boolean;
export type Health = 'OK' | 'Warning' | 'Critical';
export const BOOT_OVERRIDE_ENABLED = ['Disabled', 'Once', 'Continuous'] as const;
export type BootOverrideEnabled = (typeof BOOT_OVERRIDE_ENABLED)[number];
export const INDICATOR_LEDS = ['Lit', 'Blinking', 'Off'] as const;
export type IndicatorLed = (typeof INDICATOR_LEDS)[number];

export interface ProcessorSpec {
  model: string;
  cores: number;
  threads: number;
  maxSpeedMHz: number;
}

export interface DiskSpec {
  /** Drive Id; default disk<N>. */
  id?: string;
  name?: string;
  capacityBytes: number;
  serialNumber: string;
  model?: string;
  mediaType?: 'HDD' | 'SSD';
  protocol?: 'SATA' | 'SAS' | 'NVMe';
}

export interface FirmwareComponent {
  /** SoftwareInventory Id, e.g. `BIOS`, `BMC`. */
  id: string;
  name: string;
  version: string;
  updateable?: boolean;
  manufacturer?: string;
}

export interface SystemHardware {
  manufacturer: string;
  model: string;
  serialNumber: string;
  processors: ProcessorSpec[];
  /** One DIMM per entry, MiB each. */
  memoryMiB: number[];
  /** MAC addresses, one NIC each (lower case, colons). */
  nics: string[];
  disks: DiskSpec[];
}

export interface SystemOptions {
  /** The ComputerSystem Id (a path segment). */
  id: string;
  name?: string;
  uuid?: string;
  power: MachinePower;
  hardware?: Partial<SystemHardware>;
  /** BIOS attributes with their default (factory) values. */
  biosAttributes?: Record<string, BiosValue>;
  /** What each BIOS attribute may hold (the attribute registry); default DEFAULT_BIOS_RULES. */
  biosRules?: Record<string, BiosAttributeRule>;
  /** Firmware inventory; default BIOS and BMC components. */
  firmware?: FirmwareComponent[];
  /** Boot mode the override starts with; default the machine's first boot mode. */
  bootMode?: BootMode;
}

/** What the service gives each of its systems besides its own options. */
export interface ServiceSettings {
  /** Where a system's virtual CD keeps its image, which hosts it may come from. */
  virtualMedia: VirtualMediaSettings;
}

export const DEFAULT_BIOS_ATTRIBUTES: Readonly<Record<string, BiosValue>> = {
  BootMode: 'Uefi',
  ProcTurboMode: 'Enabled',
  ProcVirtualization: 'Enabled',
  SriovGlobalEnable: 'Disabled',
  EmbeddedSata: 'AhciMode',
  PxeRetryCount: 3,
  SecureBoot: 'Disabled',
  WakeOnLan: true,
};

export interface BootOverride {
  target: BootSource;
  enabled: BootOverrideEnabled;
  mode: BootMode;
  /** Boot.HttpBootUri: what a `UefiHttp` boot loads (null: the URI DHCP names). */
  httpBootUri: string | null;
}

export class ManagedSystem {
  readonly id: string;
  readonly name: string;
  readonly uuid: string;
  readonly power: MachinePower;
  readonly hardware: SystemHardware;
  readonly biosDefaults: Readonly<Record<string, BiosValue>>;
  readonly biosRules: Readonly<Record<string, BiosAttributeRule>>;
  /** Id of the BIOS attribute registry (the Bios resource's AttributeRegistry); the service names it. */
  biosRegistryId = 'BiosAttributeRegistry.v1_0_0';
  readonly firmware: Array<FirmwareComponent & { writeProtected: boolean }>;
  bootOverride: BootOverride;
  biosAttributes: Record<string, BiosValue>;
  /** Attributes set through Bios/Settings, applied at the next boot; empty when none. */
  pendingBios: Record<string, BiosValue> = {};
  health: Health = 'OK';
  indicatorLed: IndicatorLed = 'Off';
  /** When the pending BIOS settings were last applied (ISO time), for @Redfish.Settings. */
  biosAppliedAt: string | undefined;
  /** The manager's virtual CD; undefined when the machine has no CD drive. */
  readonly virtualCd: VirtualCd | undefined;

  constructor(options: SystemOptions, service?: ServiceSettings) {
    this.id = options.id;
    this.name = options.name ?? options.id;
    this.uuid = options.uuid ?? randomUUID();
    this.power = options.power;
    const hw = options.hardware ?? {};
    this.hardware = {
      manufacturer: hw.manufacturer ?? 'bmaas',
      model: hw.model ?? 'Lab machine',
      serialNumber: hw.serialNumber ?? `SN-${options.id}`,
      processors: hw.processors ?? [{ model: 'QEMU Virtual CPU', cores: 1, threads: 1, maxSpeedMHz: 2000 }],
      memoryMiB: hw.memoryMiB ?? [1024],
      nics: (hw.nics ?? []).map((mac) => mac.toLowerCase()),
      disks: hw.disks ?? [],
    };
    this.biosDefaults = { ...(options.biosAttributes ?? DEFAULT_BIOS_ATTRIBUTES) };
    this.biosAttributes = { ...this.biosDefaults };
    this.biosRules = { ...(options.biosRules ?? DEFAULT_BIOS_RULES) };
    this.firmware = (
      options.firmware ?? [
        { id: 'BIOS', name: 'System BIOS', version: '1.0.0', updateable: true },
        { id: 'BMC', name: 'BMC firmware', version: '1.0.0', updateable: true },
      ]
    ).map((component) => ({ ...component, writeProtected: false }));
    const mode = options.bootMode ?? options.power.bootModes[0] ?? 'UEFI';
    this.bootOverride = { target: 'None', enabled: 'Disabled', mode, httpBootUri: null };
    const drive = options.power.cdDrive;
    this.virtualCd = drive && service ? new VirtualCd(this.id, drive, service.virtualMedia) : undefined;
  }

  get bootSources(): readonly BootSource[] {
    return this.power.bootSources;
  }

  powerState(): Promise<RedfishPowerState> {
    return this.power.powerState();
  }

  /**
   * ComputerSystem.Reset. A reset that boots the machine boots it from the override
   * (then cleared when it was `Once`) and applies the pending BIOS settings first.
   */
  async reset(type: unknown): Promise<void> {
    if (typeof type !== 'string' || !this.power.resetTypes.includes(type as ResetType)) {
      throw new RedfishError(
        400,
        'ActionParameterValueNotInList',
        `The value ${JSON.stringify(type)} for the parameter ResetType in the action ComputerSystem.Reset is not in the list of acceptable values (${this.power.resetTypes.join(', ')}).`,
        ['#/ResetType'],
      );
    }
    const resetType = type as ResetType;
    const boots = resetBoots(resetType, await this.power.powerState());
    const override = this.bootOverride;
    const target = override.enabled === 'Disabled' ? 'None' : override.target;
    if (boots) this.applyPendingBios();
    const httpBootUri = target === 'UefiHttp' ? (override.httpBootUri ?? undefined) : undefined;
    await this.power.reset(resetType, { target, mode: override.mode, ...(httpBootUri ? { httpBootUri } : {}) });
    if (boots && override.enabled === 'Once') this.bootOverride = { ...override, enabled: 'Disabled', target: 'None' };
  }

  /** PATCH of the Boot object of the ComputerSystem. */
  patchBoot(boot: unknown): void {
    if (!isObject(boot)) throw valueTypeError('Boot', boot);
    const next = { ...this.bootOverride };
    for (const [key, value] of Object.entries(boot)) {
      switch (key) {
        case 'BootSourceOverrideTarget':
          if (!this.bootSources.includes(value as BootSource))
            throw valueNotInList(`Boot.${key}`, value, this.bootSources);
          next.target = value as BootSource;
          break;
        case 'BootSourceOverrideEnabled':
          if (!BOOT_OVERRIDE_ENABLED.includes(value as BootOverrideEnabled)) {
            throw valueNotInList(`Boot.${key}`, value, BOOT_OVERRIDE_ENABLED);
          }
          next.enabled = value as BootOverrideEnabled;
          break;
        case 'BootSourceOverrideMode':
          if (!this.power.bootModes.includes(value as BootMode)) {
            throw valueNotInList(`Boot.${key}`, value, this.power.bootModes);
          }
          next.mode = value as BootMode;
          break;
        case 'HttpBootUri':
          if (value !== null && (typeof value !== 'string' || !/^https?:\/\/\S+$/.test(value))) {
            throw valueTypeError(`Boot.${key}`, value);
          }
          next.httpBootUri = value as string | null;
          break;
        default:
          throw propertyUnknown(`Boot.${key}`);
      }
    }
    // A target set without saying for how long means once (what BMCs do, and what clients expect).
    if ('BootSourceOverrideTarget' in boot && !('BootSourceOverrideEnabled' in boot) && next.enabled === 'Disabled') {
      next.enabled = 'Once';
    }
    this.bootOverride = next;
  }

  patchIndicatorLed(value: unknown): void {
    if (!INDICATOR_LEDS.includes(value as IndicatorLed)) throw valueNotInList('IndicatorLED', value, INDICATOR_LEDS);
    this.indicatorLed = value as IndicatorLed;
  }

  /** PATCH of Bios/Settings: each attribute must exist and keep its type; applied at the next boot. */
  setPendingBios(attributes: unknown): void {
    if (!isObject(attributes)) throw valueTypeError('Attributes', attributes);
    for (const [name, value] of Object.entries(attributes)) {
      if (!Object.hasOwn(this.biosDefaults, name)) throw propertyUnknown(`Attributes.${name}`);
      if (typeof value !== typeof this.biosDefaults[name]) throw valueTypeError(`Attributes.${name}`, value);
      checkBiosValue(name, value as BiosValue, this.biosRules[name]);
    }
    this.pendingBios = { ...this.pendingBios, ...(attributes as Record<string, BiosValue>) };
  }

  /** Bios.ResetBios: the factory defaults, applied at the next boot like any setting. */
  resetBiosToDefaults(): void {
    this.pendingBios = { ...this.biosDefaults };
  }

  private applyPendingBios(): void {
    if (Object.keys(this.pendingBios).length === 0) return;
    this.biosAttributes = { ...this.biosAttributes, ...this.pendingBios };
    this.pendingBios = {};
    this.biosAppliedAt = new Date().toISOString();
  }

  firmwareComponent(id: string): (FirmwareComponent & { writeProtected: boolean }) | undefined {
    return this.firmware.find((component) => component.id === id);
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
