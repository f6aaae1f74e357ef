import type { HardwareInterface } from './interfaces.js';
import type { Task } from './task.js';

/**
 * Contracts of the interface kinds a hardware type may leave to their generic
 * implementations (no-bios, no-console, noop network, …). The generic ones
 * throw UnsupportedDriverExtension from every action, as Ironic's do; the
 * conductor calls these under the node's lock, like the core kinds.
 */

/** BIOS settings. Settings are cached by the conductor; no implementation here caches any. */
export interface BiosInterface extends HardwareInterface {}

/** Firmware components. Like BIOS settings, cached by the conductor; none here caches any. */
export interface FirmwareInterface extends HardwareInterface {}

/** Hardware inspection. */
export interface InspectInterface extends HardwareInterface {}

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
