/**
 * Microversions of the v1 API. Each constant is the minor version that added
 * a behaviour we implement; handlers compare the request's minor version with
 * them. docs/api.md lists the same table for users.
 */
export const MIN_MINOR = 1;
/** Highest version whose behaviour this API implements (the `baremetal` CLI asks for 1.78). */
export const MAX_MINOR = 81;
/** Version of a request that names none. */
export const DEFAULT_MINOR = MIN_MINOR;

export const MIN_VERSION = `1.${MIN_MINOR}`;
export const MAX_VERSION = `1.${MAX_MINOR}`;

export const VERSION_HEADER = 'X-OpenStack-Ironic-API-Version';
export const MIN_VERSION_HEADER = 'X-OpenStack-Ironic-API-Minimum-Version';
export const MAX_VERSION_HEADER = 'X-OpenStack-Ironic-API-Maximum-Version';

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
  PORTGROUPS_SUBCONTROLLERS: 24,
  SOFT_POWER_OFF: 27,
  DYNAMIC_DRIVERS: 30,
  DYNAMIC_INTERFACES: 31,
  VOLUME: 32,
  STORAGE_INTERFACE: 33,
  PORT_PHYSICAL_NETWORK: 34,
  TRAITS: 37,
  RESCUE: 38,
  INSPECT_WAIT: 39,
  BIOS_INTERFACE: 40,
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
  RETIRED: 61,
  LESSEE: 65,
  NETWORK_DATA: 66,
  DEPLOY_UNDEPLOY_VERBS: 73,
  BOOT_MODE: 75,
  DRIVER_FIELDS: 77,
  NODE_INVENTORY: 81,
} as const;

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
