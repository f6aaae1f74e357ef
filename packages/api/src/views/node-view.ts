import { InvalidParameterValue, type NodeRecord, ProvisionState } from '@bmaas/common';
import { versionTooLow } from '../errors.js';
import { type Link, selfAndBookmark } from '../links.js';
import { Minor } from '../versions.js';
import { MASK, maskSecrets, pickFields, timestamp } from './format.js';

/** Fields of GET /v1/nodes without ?fields or detail. */
export const NODE_DEFAULT_FIELDS = [
  'instance_uuid',
  'maintenance',
  'power_state',
  'provision_state',
  'uuid',
  'name',
] as const;

/** Node fields added after 1.1, with the minor version that added each. */
export const VERSIONED_NODE_FIELDS: Readonly<Record<string, number>> = {
  driver_internal_info: Minor.DRIVER_INTERNAL_INFO,
  name: Minor.NODE_NAME,
  inspection_finished_at: Minor.INSPECT_STATE,
  inspection_started_at: Minor.INSPECT_STATE,
  clean_step: Minor.CLEAN_STEP,
  raid_config: Minor.RAID_CONFIG,
  target_raid_config: Minor.RAID_CONFIG,
  network_interface: Minor.NETWORK_INTERFACE,
  resource_class: Minor.RESOURCE_CLASS,
  boot_interface: Minor.DYNAMIC_INTERFACES,
  console_interface: Minor.DYNAMIC_INTERFACES,
  deploy_interface: Minor.DYNAMIC_INTERFACES,
  inspect_interface: Minor.DYNAMIC_INTERFACES,
  management_interface: Minor.DYNAMIC_INTERFACES,
  power_interface: Minor.DYNAMIC_INTERFACES,
  raid_interface: Minor.DYNAMIC_INTERFACES,
  vendor_interface: Minor.DYNAMIC_INTERFACES,
  storage_interface: Minor.STORAGE_INTERFACE,
  traits: Minor.TRAITS,
  rescue_interface: Minor.RESCUE,
  bios_interface: Minor.BIOS_INTERFACE,
  fault: Minor.FAULT,
  deploy_step: Minor.DEPLOY_STEP,
  conductor_group: Minor.CONDUCTOR_GROUP,
  automated_clean: Minor.AUTOMATED_CLEAN,
  protected: Minor.PROTECTED,
  protected_reason: Minor.PROTECTED,
  conductor: Minor.CONDUCTORS,
  owner: Minor.OWNER,
  description: Minor.DESCRIPTION,
  allocation_uuid: Minor.ALLOCATION,
  retired: Minor.RETIRED,
  retired_reason: Minor.RETIRED,
  lessee: Minor.LESSEE,
  network_data: Minor.NETWORK_DATA,
  boot_mode: Minor.BOOT_MODE,
  secure_boot: Minor.BOOT_MODE,
  shard: Minor.SHARDS,
  parent_node: Minor.PARENT_NODE,
  firmware_interface: Minor.FIRMWARE_INTERFACE,
  service_step: Minor.SERVICE_VERB,
  disable_power_off: Minor.DISABLE_POWER_OFF,
  instance_name: Minor.INSTANCE_NAME,
  health: Minor.NODE_HEALTH,
};

/** Every field a node answer may hold (the names ?fields= accepts), in answer order. */
export const NODE_FIELDS = [
  'uuid',
  'created_at',
  'updated_at',
  'automated_clean',
  'bios_interface',
  'boot_interface',
  'boot_mode',
  'clean_step',
  'conductor_group',
  'console_enabled',
  'console_interface',
  'deploy_interface',
  'deploy_step',
  'description',
  'disable_power_off',
  'driver',
  'driver_info',
  'driver_internal_info',
  'extra',
  'fault',
  'firmware_interface',
  'health',
  'inspection_finished_at',
  'inspection_started_at',
  'inspect_interface',
  'instance_info',
  'instance_name',
  'instance_uuid',
  'last_error',
  'lessee',
  'maintenance',
  'maintenance_reason',
  'management_interface',
  'name',
  'network_data',
  'network_interface',
  'owner',
  'parent_node',
  'power_interface',
  'power_state',
  'properties',
  'protected',
  'protected_reason',
  'provision_state',
  'provision_updated_at',
  'raid_config',
  'raid_interface',
  'rescue_interface',
  'reservation',
  'resource_class',
  'retired',
  'retired_reason',
  'secure_boot',
  'service_step',
  'shard',
  'storage_interface',
  'target_power_state',
  'target_provision_state',
  'target_raid_config',
  'traits',
  'vendor_interface',
  'conductor',
  'allocation_uuid',
  'chassis_uuid',
] as const;

export function nodeFieldAllowed(field: string, minor: number): boolean {
  return minor >= (VERSIONED_NODE_FIELDS[field] ?? 0);
}

/** A sort key of a field newer than the request's version is not acceptable; the store knows the sortable ones. */
export function checkNodeSortKey(key: string, minor: number): void {
  const since = VERSIONED_NODE_FIELDS[key];
  if (since !== undefined && minor < since) throw versionTooLow(since);
}

/** Checks ?fields= against the known node fields and the request's version. */
export function checkNodeFields(fields: readonly string[] | undefined, minor: number): void {
  for (const field of fields ?? []) {
    if (!(NODE_FIELDS as readonly string[]).includes(field)) {
      throw new InvalidParameterValue(`Field ${field} is not a valid field.`);
    }
    const since = VERSIONED_NODE_FIELDS[field];
    if (since !== undefined && minor < since) throw versionTooLow(since);
  }
}

export interface NodeViewOptions {
  minor: number;
  baseUrl: string;
  /** Subset of NODE_FIELDS to answer with; undefined = all, with sub-resource links. */
  fields?: readonly string[];
  /** Hostname of the owning conductor, null when none is alive. */
  conductor: string | null;
  /** The node's traits, sorted; undefined when the answer does not show them. */
  traits?: readonly string[];
}

/** Provision state names older clients know (1.1 says null for available; before 1.39 no "inspect wait"). */
function provisionStateFor(state: string, minor: number): string | null {
  if (minor < Minor.AVAILABLE_STATE && state === ProvisionState.AVAILABLE) return null;
  if (minor < Minor.INSPECT_WAIT && state === ProvisionState.INSPECT_WAIT) return ProvisionState.INSPECTING;
  return state;
}

/** instance_info as answered: secrets, the config drive and the image URL masked. */
export function maskInstanceInfo(info: Record<string, unknown>): Record<string, unknown> {
  const masked = maskSecrets(info);
  if (masked.configdrive) masked.configdrive = MASK;
  if (masked.image_url) masked.image_url = MASK;
  return masked;
}

/** The service step running, held or waited for (the conductor keeps it in driver_internal_info); else {}. */
function serviceStepOf(node: NodeRecord): Record<string, unknown> {
  const step = node.driverInternalInfo.service_step;
  return typeof step === 'object' && step !== null && !Array.isArray(step) ? (step as Record<string, unknown>) : {};
}

/** A node as Ironic answers it at the request's microversion. */
export function nodeView(node: NodeRecord, options: NodeViewOptions): Record<string, unknown> {
  const { minor, baseUrl } = options;
  const full: Record<string, unknown> = {
    uuid: node.uuid,
    created_at: timestamp(node.createdAt),
    updated_at: timestamp(node.updatedAt),
    automated_clean: node.automatedClean,
    bios_interface: node.biosInterface,
    boot_interface: node.bootInterface,
    boot_mode: node.bootMode,
    clean_step: node.cleanStep ?? {},
    conductor_group: node.conductorGroup,
    console_enabled: node.consoleEnabled,
    console_interface: node.consoleInterface,
    deploy_interface: node.deployInterface,
    deploy_step: node.deployStep ?? {},
    description: node.description,
    disable_power_off: node.disablePowerOff,
    driver: node.driver,
    driver_info: maskSecrets(node.driverInfo),
    driver_internal_info: maskSecrets(node.driverInternalInfo),
    extra: node.extra,
    fault: node.fault,
    firmware_interface: node.firmwareInterface,
    health: node.health,
    inspection_finished_at: timestamp(node.inspectionFinishedAt),
    inspection_started_at: timestamp(node.inspectionStartedAt),
    inspect_interface: node.inspectInterface,
    instance_info: maskInstanceInfo(node.instanceInfo),
    instance_uuid: node.instanceUuid,
    instance_name: node.instanceName,
    last_error: node.lastError,
    lessee: node.lessee,
    maintenance: node.maintenance,
    maintenance_reason: node.maintenanceReason,
    management_interface: node.managementInterface,
    name: node.name,
    network_data: node.networkData,
    network_interface: node.networkInterface,
    owner: node.owner,
    parent_node: node.parentNode,
    power_interface: node.powerInterface,
    power_state: node.powerState,
    properties: node.properties,
    protected: node.protected,
    protected_reason: node.protectedReason,
    provision_state: provisionStateFor(node.provisionState, minor),
    provision_updated_at: timestamp(node.provisionUpdatedAt),
    raid_config: node.raidConfig,
    raid_interface: node.raidInterface,
    rescue_interface: node.rescueInterface,
    reservation: node.reservation,
    resource_class: node.resourceClass,
    retired: node.retired,
    retired_reason: node.retiredReason,
    secure_boot: node.secureBoot,
    service_step: serviceStepOf(node),
    shard: node.shard,
    storage_interface: node.storageInterface,
    target_power_state: node.targetPowerState,
    target_provision_state: node.targetProvisionState,
    target_raid_config: node.targetRaidConfig,
    traits: options.traits ?? [],
    vendor_interface: node.vendorInterface,
    links: selfAndBookmark(baseUrl, 'nodes', node.uuid),
    conductor: options.conductor,
    allocation_uuid: node.allocationUuid ?? null,
    chassis_uuid: node.chassisUuid ?? null,
  };
  const view = pickFields(full, options.fields);
  for (const field of Object.keys(view)) {
    if (!nodeFieldAllowed(field, minor)) delete view[field];
  }
  if (!options.fields) Object.assign(view, subResourceLinks(node.uuid, baseUrl, minor));
  return view;
}

function subResourceLinks(uuid: string, baseUrl: string, minor: number): Record<string, Link[]> {
  const links: Record<string, Link[]> = { ports: selfAndBookmark(baseUrl, 'nodes', `${uuid}/ports`) };
  if (minor >= Minor.STATES_LINKS) links.states = selfAndBookmark(baseUrl, 'nodes', `${uuid}/states`);
  if (minor >= Minor.PORTGROUPS_SUBCONTROLLERS) {
    links.portgroups = selfAndBookmark(baseUrl, 'nodes', `${uuid}/portgroups`);
  }
  if (minor >= Minor.VOLUME) links.volume = selfAndBookmark(baseUrl, 'nodes', `${uuid}/volume`);
  return links;
}

/** GET /v1/nodes/{id}/states. */
export function nodeStatesView(node: NodeRecord, minor: number): Record<string, unknown> {
  const states: Record<string, unknown> = {
    console_enabled: node.consoleEnabled,
    last_error: node.lastError,
    power_state: node.powerState,
    provision_state: provisionStateFor(node.provisionState, minor),
    target_power_state: node.targetPowerState,
    target_provision_state: node.targetProvisionState,
    provision_updated_at: timestamp(node.provisionUpdatedAt),
  };
  if (minor >= Minor.RAID_CONFIG) {
    Object.assign(states, { raid_config: node.raidConfig, target_raid_config: node.targetRaidConfig });
  }
  if (minor >= Minor.BOOT_MODE) Object.assign(states, { boot_mode: node.bootMode, secure_boot: node.secureBoot });
  return states;
}
