import type { BiosSetting, FirmwareComponent, InspectionData } from '@bmaas/common';
import type { HardwareInterface, ProvisionStep, StepOutcome, UserStep } from './interfaces.js';
import type { Task } from './task.js';

/**
 * Contracts of the interface kinds a hardware type may leave to their generic
 * implementations (no-bios, no-console, noop network, …). The generic ones
 * throw UnsupportedDriverExtension from every action, as Ironic's do; the
 * conductor calls these under the node's lock, like the core kinds.
 */

/**
 * Clean and service steps an interface runs itself, out of band, without the
 * deploy ramdisk (Ironic's steps of the bios, management, firmware
 * interfaces). The conductor runs a step named `<kind>.<step>` through the
 * node's interface of that kind when it offers the step, whether or not a
 * ramdisk is booted, under the node's exclusive lock.
 */
export interface OutOfBandSteps {
  /** The steps offered (priority 0: they run on request only; requires_ramdisk false). No hardware access. */
  getOutOfBandSteps(task: Task): ProvisionStep[];
  /**
   * Runs one step with the user's arguments and returns when it finished
   * ('done'), checked on the hardware. Throws InvalidParameterValue for bad
   * arguments, and an error naming what failed otherwise.
   */
  executeOutOfBandStep(task: Task, step: UserStep): Promise<StepOutcome>;
}

/**
 * BIOS settings. The conductor caches what getSettings reads (the node's
 * /v1/nodes/{id}/bios) when the node is managed (verify) and after every
 * bios step; apply_configuration and factory_reset are out-of-band steps.
 * Both optional: the generic and fake implementations have neither.
 */
export interface BiosInterface extends HardwareInterface, Partial<OutOfBandSteps> {
  /** The current BIOS settings, with the registry fields where the hardware has a registry. Read-only. */
  getSettings?(task: Task): Promise<BiosSetting[]>;
}

/** Firmware components. The conductor caches what getComponents reads (/v1/nodes/{id}/firmware) when the node is managed. */
export interface FirmwareInterface extends HardwareInterface {
  /** The firmware components and their versions. Optional; read-only. */
  getComponents?(task: Task): Promise<FirmwareComponent[]>;
}

/**
 * Inspection: fills in a node's properties and ports from its hardware.
 * The conductor calls these under the node's exclusive lock. In-band
 * implementations boot a ramdisk that posts its inventory to the API; the
 * conductor processes that inventory (properties, ports, storage) itself and
 * then calls continueInspection. Anything thrown fails inspection
 * (`inspect failed`, the error as last_error).
 */
export interface InspectInterface extends HardwareInterface {
  /**
   * Starts inspection (inspecting). 'done': finished in place (fake);
   * 'wait': the node waits in `inspect wait` for its inventory; an
   * inventory (out-of-band inspection, read from the BMC): the conductor
   * processes it as an agent's (properties, ports, stored inventory, rules)
   * and the node is inspected.
   */
  inspectHardware(task: Task): Promise<StepOutcome | InspectionData>;
  /** The inventory arrived and was processed: undo what inspectHardware prepared (ramdisk boot) and power off. */
  continueInspection(task: Task): Promise<void>;
  /** Inspection was aborted or timed out in `inspect wait`: the same tidy-up, best effort. Idempotent. */
  abortInspection(task: Task): Promise<void>;
}

/** Rescue of an active node. */
export interface RescueInterface extends HardwareInterface {}

/** Remote volumes (cinder, …). */
export interface StorageInterface extends HardwareInterface {}

/** How to reach a node's serial console. */
export interface ConsoleInfo {
  type: string;
  url: string;
}

/** Serial console. Idempotent; UnsupportedDriverExtension when there is none. */
export interface ConsoleInterface extends HardwareInterface {
  startConsole(task: Task): Promise<void>;
  stopConsole(task: Task): Promise<void>;
  getConsole(task: Task): Promise<ConsoleInfo>;
}

/** A virtual network interface (Neutron port) a node is attached to. */
export interface VifInfo {
  id: string;
  [key: string]: unknown;
}

/** Tenant networking of a node. The noop implementation attaches nothing and lists nothing, as Ironic's. */
export interface NetworkInterface extends HardwareInterface {
  /** Attaches a VIF. Throws VifAlreadyAttached or NoFreePhysicalPorts where the interface tracks them. */
  vifAttach(task: Task, vif: VifInfo): Promise<void>;
  /** Detaches a VIF. Throws VifNotAttached where the interface tracks VIFs. */
  vifDetach(task: Task, vifId: string): Promise<void>;
  /** The VIFs attached to the node. */
  vifList(task: Task): Promise<VifInfo[]>;
}

/** A RAID configuration as Ironic describes it (`{logical_disks: [...]}`). */
export type RaidConfig = Record<string, unknown>;

/** RAID. validateRaidConfig is called before a target RAID configuration is stored. */
export interface RaidInterface extends HardwareInterface {
  /** Throws InvalidParameterValue for a configuration the interface cannot build. */
  validateRaidConfig(task: Task, config: RaidConfig): Promise<void>;
}

/** A vendor passthru method as Ironic lists it. */
export interface VendorMethod {
  http_methods: string[];
  async: boolean;
  description: string;
  attach: boolean;
  require_exclusive_lock: boolean;
}

/** Vendor-specific calls (`/v1/nodes/{id}/vendor_passthru?method=…`). */
export interface VendorInterface extends HardwareInterface {
  /** The methods offered, by name (empty when there are none). */
  methods(): Record<string, VendorMethod>;
  /** Runs `method`; InvalidParameterValue for an unknown method or HTTP method. */
  passthru(task: Task, method: string, httpMethod: string, data: Record<string, unknown>): Promise<unknown>;
}

/** The contract of each optional kind. */
export interface OptionalInterfaceKinds {
  bios: BiosInterface;
  console: ConsoleInterface;
  firmware: FirmwareInterface;
  inspect: InspectInterface;
  network: NetworkInterface;
  raid: RaidInterface;
  rescue: RescueInterface;
  storage: StorageInterface;
  vendor: VendorInterface;
}
