/**
 * Microversions of the v1 API. Each Minor constant is the minor version that
 * added a behaviour we implement; handlers compare the request's minor
 * version with them. MICROVERSIONS is the whole table, docs/api.md shows it.
 */
export const MIN_MINOR = 1;

export const Minor = {
  AVAILABLE_STATE: 2,
  DRIVER_INTERNAL_INFO: 3,
  MANAGEABLE_STATE: 4,
  NODE_NAME: 5,
  INSPECT_STATE: 6,
  CLEAN_STEP: 7,
  FIELDS_SUBSET: 8,
  PROVISION_STATE_FILTER: 9,
  UNRESTRICTED_NODE_NAME: 10,
  ENROLL_STATE: 11,
  RAID_CONFIG: 12,
  ABORT_VERB: 13,
  STATES_LINKS: 14,
  MANUAL_CLEAN: 15,
  DRIVER_FILTER: 16,
  ADOPT_VERB: 17,
  PORT_INTERNAL_INFO: 18,
  PORT_ADVANCED_NET_FIELDS: 19,
  NETWORK_INTERFACE: 20,
  RESOURCE_CLASS: 21,
  PORTGROUPS: 23,
  PORTGROUPS_SUBCONTROLLERS: 24,
  UNSET_CHASSIS_UUID: 25,
  PORTGROUP_MODE_PROPERTIES: 26,
  SOFT_POWER_OFF: 27,
  INJECT_NMI: 29,
  VIFS: 28,
  DYNAMIC_DRIVERS: 30,
  DYNAMIC_INTERFACES: 31,
  VOLUME: 32,
  STORAGE_INTERFACE: 33,
  PORT_PHYSICAL_NETWORK: 34,
  TRAITS: 37,
  RESCUE: 38,
  INSPECT_WAIT: 39,
  BIOS_INTERFACE: 40,
  INSPECT_ABORT: 41,
  FAULT: 42,
  DETAIL_QUERY: 43,
  DEPLOY_STEP: 44,
  RESET_INTERFACES: 45,
  CONDUCTOR_GROUP: 46,
  AUTOMATED_CLEAN: 47,
  PROTECTED: 48,
  CONDUCTORS: 49,
  OWNER: 50,
  DESCRIPTION: 51,
  ALLOCATION: 52,
  PORT_SMARTNIC: 53,
  EVENTS: 54,
  DEPLOY_TEMPLATES: 55,
  ALLOCATION_UPDATE: 57,
  ALLOCATION_BACKFILL: 58,
  ALLOCATION_OWNER: 60,
  RETIRED: 61,
  LOCAL_LINK_NETWORK_TYPE: 64,
  LESSEE: 65,
  NETWORK_DATA: 66,
  VIF_PORT_UUID: 67,
  USER_DEPLOY_STEPS: 69,
  CLEAN_DISABLE_RAMDISK: 70,
  DEPLOY_UNDEPLOY_VERBS: 73,
  BIOS_REGISTRY: 74,
  BOOT_MODE: 75,
  BOOT_MODE_CHANGE: 76,
  DRIVER_FIELDS: 77,
  NODE_HISTORY: 78,
  NODE_INVENTORY: 81,
  SHARDS: 82,
  PARENT_NODE: 83,
  UNHOLD_VERB: 85,
  FIRMWARE_INTERFACE: 86,
  SERVICE_VERB: 87,
  DISABLE_POWER_OFF: 95,
  PORT_NAME: 88,
  VMEDIA_ATTACH: 89,
  OVN_VTEP: 90,
  RUNBOOKS: 92,
  VMEDIA_LIST: 93,
  PORT_NODE_IDENT: 94,
  INSPECTION_RULES: 96,
  PORT_DESCRIPTION: 97,
  PATCH_ESCAPED_KEYS: 98,
  CONDUCTOR_GROUP_PORT_FILTER: 99,
  PORT_VENDOR: 100,
  PORT_CATEGORY: 101,
  PORTGROUP_PHYSICAL_NETWORK: 102,
  PORTGROUP_CATEGORY: 103,
  INSTANCE_NAME: 104,
  OVN_VTEP_REMOVED: 105,
  PORTGROUP_SHARD_FILTER: 106,
  X_OPENSTACK_REQUEST_ID: 107,
  SERVICE_DISABLE_RAMDISK: 108,
  NODE_HEALTH: 109,
  DEPLOY_WAIT_ABORT: 110,
  DYNAMIC_PORTGROUP: 111,
  RUNBOOK_TRAITS: 112,
  HISTORY_PROJECT: 113,
  FIRMWARE_IDENTITY: 114,
  HISTORY_STATE_FIELDS: 115,
} as const;

/** Whether this API serves a microversion's feature. */
export type MicroversionStatus = 'served' | 'not served';

export interface Microversion {
  minor: number;
  feature: string;
  status: MicroversionStatus;
}

/**
 * The microversions up to 1.115 with what each adds, and whether it is
 * served. docs/api.md shows the same rows. MAX_MINOR stops below the first
 * row not served.
 */
export const MICROVERSIONS: readonly Microversion[] = [
  { minor: 1, feature: 'base version', status: 'served' },
  { minor: 2, feature: 'available state shown as such', status: 'served' },
  { minor: 3, feature: 'node driver_internal_info', status: 'served' },
  { minor: 4, feature: 'manageable state; manage and provide', status: 'served' },
  { minor: 5, feature: 'node names', status: 'served' },
  { minor: 6, feature: 'inspection states and timestamps', status: 'served' },
  { minor: 7, feature: 'node clean_step', status: 'served' },
  { minor: 8, feature: '?fields=', status: 'served' },
  { minor: 9, feature: '?provision_state= filter', status: 'served' },
  { minor: 10, feature: 'RFC 3986 node names', status: 'served' },
  { minor: 11, feature: 'new nodes in enroll', status: 'served' },
  { minor: 12, feature: 'RAID: raid_config, target_raid_config, PUT states/raid', status: 'served' },
  { minor: 13, feature: 'abort verb', status: 'served' },
  { minor: 14, feature: 'states and driver properties links', status: 'served' },
  { minor: 15, feature: 'manual cleaning', status: 'served' },
  { minor: 16, feature: '?driver= filter', status: 'served' },
  { minor: 17, feature: 'adopt verb', status: 'served' },
  { minor: 18, feature: 'port internal_info', status: 'served' },
  { minor: 19, feature: 'port local_link_connection, pxe_enabled', status: 'served' },
  { minor: 20, feature: 'node network_interface', status: 'served' },
  { minor: 21, feature: 'node resource_class', status: 'served' },
  { minor: 22, feature: 'ramdisk lookup and heartbeat', status: 'served' },
  { minor: 23, feature: 'portgroups', status: 'served' },
  { minor: 24, feature: 'node and port portgroup subcontrollers', status: 'served' },
  { minor: 25, feature: 'unset node chassis_uuid', status: 'served' },
  { minor: 26, feature: 'portgroup mode and properties', status: 'served' },
  { minor: 27, feature: 'soft reboot and soft power off', status: 'served' },
  { minor: 28, feature: 'node vifs', status: 'served' },
  { minor: 29, feature: 'inject NMI (PUT management/inject_nmi)', status: 'served' },
  { minor: 30, feature: 'dynamic drivers', status: 'served' },
  { minor: 31, feature: 'node *_interface fields', status: 'served' },
  { minor: 32, feature: 'volume connectors and targets', status: 'served' },
  { minor: 33, feature: 'node storage_interface', status: 'served' },
  { minor: 34, feature: 'port physical_network', status: 'served' },
  { minor: 35, feature: 'configdrive with rebuild', status: 'served' },
  { minor: 36, feature: 'agent_version in heartbeat', status: 'served' },
  { minor: 37, feature: 'node traits', status: 'served' },
  { minor: 38, feature: 'rescue and unrescue; rescue_interface', status: 'served' },
  { minor: 39, feature: 'inspect wait state', status: 'served' },
  { minor: 40, feature: 'node bios_interface and BIOS settings', status: 'served' },
  { minor: 41, feature: 'abort of inspection', status: 'served' },
  { minor: 42, feature: 'node fault and ?fault=', status: 'served' },
  { minor: 43, feature: '?detail= on lists', status: 'served' },
  { minor: 44, feature: 'node deploy_step', status: 'served' },
  { minor: 45, feature: '?reset_interfaces= on node PATCH', status: 'served' },
  { minor: 46, feature: 'node conductor_group', status: 'served' },
  { minor: 47, feature: 'node automated_clean', status: 'served' },
  { minor: 48, feature: 'node protected, protected_reason', status: 'served' },
  { minor: 49, feature: 'conductors; node conductor and ?conductor=', status: 'served' },
  { minor: 50, feature: 'node owner and ?owner=', status: 'served' },
  { minor: 51, feature: 'node description and ?description_contains=', status: 'served' },
  { minor: 52, feature: 'allocations; node allocation_uuid', status: 'served' },
  { minor: 53, feature: 'port is_smartnic', status: 'served' },
  { minor: 54, feature: 'external events', status: 'served' },
  { minor: 55, feature: 'deploy templates', status: 'served' },
  { minor: 56, feature: 'configdrive as an object (meta_data, network_data, user_data)', status: 'served' },
  { minor: 57, feature: 'allocation PATCH', status: 'served' },
  { minor: 58, feature: 'allocation backfill (node given on create)', status: 'served' },
  { minor: 59, feature: 'configdrive vendor_data', status: 'served' },
  { minor: 60, feature: 'allocation owner', status: 'served' },
  { minor: 61, feature: 'node retired, retired_reason, ?retired=', status: 'served' },
  { minor: 62, feature: 'agent token', status: 'served' },
  { minor: 63, feature: 'node indicators (management/indicators)', status: 'served' },
  { minor: 64, feature: 'network_type in port local_link_connection', status: 'served' },
  { minor: 65, feature: 'node lessee and ?lessee=', status: 'served' },
  { minor: 66, feature: 'node network_data', status: 'served' },
  { minor: 67, feature: 'port_uuid / portgroup_uuid on VIF attach', status: 'served' },
  { minor: 68, feature: 'agent_verify_ca in heartbeat', status: 'served' },
  { minor: 69, feature: 'deploy_steps with active and rebuild', status: 'served' },
  { minor: 70, feature: 'disable_ramdisk with manual cleaning', status: 'served' },
  { minor: 71, feature: 'scope-based roles (policy only)', status: 'served' },
  { minor: 72, feature: 'agent_status in heartbeat', status: 'served' },
  { minor: 73, feature: 'deploy and undeploy verbs', status: 'served' },
  { minor: 74, feature: 'BIOS registry fields', status: 'served' },
  { minor: 75, feature: 'node boot_mode, secure_boot', status: 'served' },
  { minor: 76, feature: 'PUT states/boot_mode and states/secure_boot', status: 'served' },
  { minor: 77, feature: '?fields= on drivers', status: 'served' },
  { minor: 78, feature: 'node history', status: 'served' },
  { minor: 79, feature: 'allocations prefer the node named as the allocation', status: 'served' },
  { minor: 80, feature: 'self-service node creation (policy only)', status: 'served' },
  { minor: 81, feature: 'node inventory', status: 'served' },
  { minor: 82, feature: 'node shard, ?shard=, ?sharded=, /v1/shards', status: 'served' },
  { minor: 83, feature: 'parent_node, /children, ?parent_node=, ?include_children=', status: 'served' },
  { minor: 84, feature: 'ramdisk callback to continue inspection', status: 'served' },
  { minor: 85, feature: 'unhold verb', status: 'served' },
  { minor: 86, feature: 'node firmware_interface and firmware components', status: 'served' },
  { minor: 87, feature: 'service verb', status: 'served' },
  { minor: 88, feature: 'port name', status: 'served' },
  { minor: 89, feature: 'virtual media attach and detach', status: 'served' },
  { minor: 90, feature: 'OVN VTEP switch keys in port local_link_connection', status: 'served' },
  { minor: 91, feature: 'no special treatment of .json in paths', status: 'served' },
  { minor: 92, feature: 'runbooks', status: 'served' },
  { minor: 93, feature: 'virtual media listing', status: 'served' },
  { minor: 94, feature: 'port created on a node named by node_ident (UUID or name)', status: 'served' },
  { minor: 95, feature: 'node disable_power_off', status: 'served' },
  { minor: 96, feature: 'inspection rules', status: 'served' },
  { minor: 97, feature: 'port description', status: 'served' },
  { minor: 98, feature: 'PATCH paths with ~0 and ~1 (JSON pointer escaping) in field names', status: 'served' },
  { minor: 99, feature: '?conductor_groups= on port and portgroup lists', status: 'served' },
  { minor: 100, feature: 'port vendor', status: 'served' },
  { minor: 101, feature: 'port category', status: 'served' },
  { minor: 102, feature: 'portgroup physical_network', status: 'served' },
  { minor: 103, feature: 'portgroup category', status: 'served' },
  { minor: 104, feature: 'node instance_name', status: 'served' },
  { minor: 105, feature: 'OVN VTEP keys of port local_link_connection refused again', status: 'served' },
  { minor: 106, feature: '?shard= on portgroup lists', status: 'served' },
  { minor: 107, feature: 'x-openstack-request-id response header', status: 'served' },
  { minor: 108, feature: 'disable_ramdisk with the service verb', status: 'served' },
  { minor: 109, feature: 'node health', status: 'served' },
  { minor: 110, feature: 'abort in wait call-back', status: 'served' },
  { minor: 111, feature: 'port available_for_dynamic_portgroup, portgroup dynamic_portgroup', status: 'served' },
  { minor: 112, feature: 'runbook traits and description; /v1/runbooks/{id}/traits', status: 'served' },
  { minor: 113, feature: 'project in node history', status: 'served' },
  { minor: 114, feature: 'firmware component vendor, model, serial_number', status: 'served' },
  { minor: 115, feature: 'state, target_provision_state, duration_seconds in node history', status: 'served' },
];

/** The version just below the first row of `table` not served (the highest row when all are). */
export function honestMaximum(table: readonly Microversion[]): number {
  let max = 0;
  for (const row of [...table].sort((a, b) => a.minor - b.minor)) {
    if (row.status === 'not served') return row.minor - 1;
    max = row.minor;
  }
  return max;
}

/** Highest version whose behaviour this API implements. */
export const MAX_MINOR = honestMaximum(MICROVERSIONS);
/** Version of a request that names none. */
export const DEFAULT_MINOR = MIN_MINOR;

export const MIN_VERSION = `1.${MIN_MINOR}`;
export const MAX_VERSION = `1.${MAX_MINOR}`;

export const VERSION_HEADER = 'X-OpenStack-Ironic-API-Version';
export const MIN_VERSION_HEADER = 'X-OpenStack-Ironic-API-Minimum-Version';
export const MAX_VERSION_HEADER = 'X-OpenStack-Ironic-API-Maximum-Version';

export type ParsedVersion = { kind: 'version'; major: number; minor: number } | { kind: 'malformed' };

/**
 * The version a request asks for: the Ironic header, else the generic
 * `OpenStack-API-Version: baremetal 1.N`, else the default; `latest` is the maximum.
 */
export function parseRequestedVersion(
  ironicHeader: string | undefined,
  genericHeader: string | undefined,
): ParsedVersion {
  let text = ironicHeader?.trim();
  if (!text && genericHeader) {
    const match = /(?:^|,)\s*baremetal\s+([^,\s]+)/i.exec(genericHeader);
    text = match?.[1];
  }
  if (!text) return { kind: 'version', major: 1, minor: DEFAULT_MINOR };
  if (text.toLowerCase() === 'latest') return { kind: 'version', major: 1, minor: MAX_MINOR };
  const match = /^(\d{1,4})\.(\d{1,4})$/.exec(text);
  if (!match) return { kind: 'malformed' };
  return { kind: 'version', major: Number(match[1]), minor: Number(match[2]) };
}

export function isSupported(version: { major: number; minor: number }): boolean {
  return version.major === 1 && version.minor >= MIN_MINOR && version.minor <= MAX_MINOR;
}
