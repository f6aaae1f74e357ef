/** Plain records as the stores return them (camelCase). */

export type JsonObject = Record<string, unknown>;

/** Hardware health a BMC reports, in Ironic's words. */
export type HealthState = 'OK' | 'Warning' | 'Critical';

export interface NodeRecord {
  id: number;
  uuid: string;
  name: string | null;
  driver: string;
  bootInterface: string;
  deployInterface: string;
  powerInterface: string;
  managementInterface: string;
  driverInfo: JsonObject;
  driverInternalInfo: JsonObject;
  instanceInfo: JsonObject;
  instanceUuid: string | null;
  /** A name for the instance deployed on the node (1.104); follows instance_info.display_name when unset. */
  instanceName: string | null;
  properties: JsonObject;
  extra: JsonObject;
  provisionState: string;
  targetProvisionState: string | null;
  provisionUpdatedAt: Date | null;
  powerState: string | null;
  targetPowerState: string | null;
  lastError: string | null;
  maintenance: boolean;
  maintenanceReason: string | null;
  /** Why the service itself put the node in maintenance (Ironic's fault), e.g. "power failure". */
  fault: string | null;
  reservation: string | null;
  conductorAffinity: number | null;
  conductorGroup: string;
  resourceClass: string | null;
  description: string | null;
  automatedClean: boolean | null;
  biosInterface: string;
  consoleInterface: string;
  firmwareInterface: string;
  inspectInterface: string;
  networkInterface: string;
  raidInterface: string;
  rescueInterface: string;
  storageInterface: string;
  vendorInterface: string;
  owner: string | null;
  lessee: string | null;
  protected: boolean;
  protectedReason: string | null;
  retired: boolean;
  retiredReason: string | null;
  networkData: JsonObject;
  disablePowerOff: boolean;
  /** The hardware's health as its BMC reports it at power sync (1.109); null until one is read. */
  health: HealthState | null;
  shard: string | null;
  parentNode: string | null;
  bootMode: string | null;
  secureBoot: boolean | null;
  consoleEnabled: boolean;
  raidConfig: JsonObject;
  targetRaidConfig: JsonObject;
  /** The chassis and allocation the node belongs to (uuids, read with the node at no cost). */
  chassisUuid?: string | null;
  allocationUuid?: string | null;
  /** The deploy step running now ({} when none). */
  deployStep: JsonObject;
  /** The clean step running now ({} when none). */
  cleanStep: JsonObject;
  inspectionStartedAt: Date | null;
  inspectionFinishedAt: Date | null;
  createdAt: Date;
  updatedAt: Date | null;
}

/** One entry of a node's history (Ironic's node_history). */
export interface NodeHistoryRecord {
  id: number;
  uuid: string;
  nodeId: number;
  conductor: string | null;
  /** provisioning, power, boot-config, … */
  eventType: string;
  /** info or error. */
  severity: string;
  event: string;
  user: string | null;
  /** The project whose request led to the entry (1.113). */
  project: string | null;
  /** The node's provision state and target when the entry was written (1.115). */
  state: string | null;
  targetProvisionState: string | null;
  /** Seconds the node had spent in its previous provision state (1.115). */
  durationSeconds: number | null;
  createdAt: Date;
}

export interface PortRecord {
  id: number;
  uuid: string;
  address: string;
  nodeId: number;
  nodeUuid: string;
  pxeEnabled: boolean;
  physicalNetwork: string | null;
  localLinkConnection: JsonObject;
  extra: JsonObject;
  name: string | null;
  /** The portgroup the port is in. */
  portgroupUuid?: string | null;
  isSmartnic?: boolean;
  description: string | null;
  vendor: string | null;
  category: string | null;
  /** Whether a conductor may put the port in a portgroup it makes for the node (1.111). */
  availableForDynamicPortgroup: boolean;
  createdAt: Date;
  updatedAt: Date | null;
}

export interface ConductorRecord {
  id: number;
  hostname: string;
  conductorGroup: string;
  online: boolean;
  drivers: string[];
  createdAt: Date;
  updatedAt: Date | null;
}

/** The interface kinds every hardware type implements itself. */
export type CoreInterfaceType = 'boot' | 'deploy' | 'power' | 'management';
export const CORE_INTERFACE_TYPES: readonly CoreInterfaceType[] = ['boot', 'deploy', 'power', 'management'];

/**
 * Interface kinds a hardware type may leave to their generic implementations
 * (OPTIONAL_INTERFACE_GENERIC): Ironic's no-bios, noop network, …
 */
export type OptionalInterfaceType =
  | 'bios'
  | 'console'
  | 'firmware'
  | 'inspect'
  | 'network'
  | 'raid'
  | 'rescue'
  | 'storage'
  | 'vendor';
export const OPTIONAL_INTERFACE_TYPES: readonly OptionalInterfaceType[] = [
  'bios',
  'console',
  'firmware',
  'inspect',
  'network',
  'raid',
  'rescue',
  'storage',
  'vendor',
];

/** The implementation that does nothing for each optional kind (Ironic's names). */
export const OPTIONAL_INTERFACE_GENERIC: Readonly<Record<OptionalInterfaceType, string>> = {
  bios: 'no-bios',
  console: 'no-console',
  firmware: 'no-firmware',
  inspect: 'no-inspect',
  network: 'noop',
  raid: 'no-raid',
  rescue: 'no-rescue',
  storage: 'noop',
  vendor: 'no-vendor',
};

/** Every interface kind a node names in a `<kind>_interface` field. */
export type InterfaceType = CoreInterfaceType | OptionalInterfaceType;
export const INTERFACE_TYPES: readonly InterfaceType[] = [...CORE_INTERFACE_TYPES, ...OPTIONAL_INTERFACE_TYPES];

export interface HardwareInterfaceRecord {
  conductorId: number;
  hardwareType: string;
  interfaceType: InterfaceType;
  interfaceName: string;
  isDefault: boolean;
}

/** What the boot path needs from a MAC lookup, in one indexed query. */
export interface BootLookupRecord {
  nodeId: number;
  nodeUuid: string;
  provisionState: string;
  driver: string;
  conductorGroup: string;
}
