import { InvalidParameterValue, type PortRecord, portDict } from '@bmaas/common';
import { versionTooLow } from '../errors.js';
import { selfAndBookmark } from '../links.js';
import { Minor } from '../versions.js';
import { pickFields } from './format.js';

/** Fields of GET /v1/ports without ?fields or detail. */
export const PORT_DEFAULT_FIELDS = ['uuid', 'address'] as const;

const VERSIONED_PORT_FIELDS: Readonly<Record<string, number>> = {
  internal_info: Minor.PORT_INTERNAL_INFO,
  pxe_enabled: Minor.PORT_ADVANCED_NET_FIELDS,
  local_link_connection: Minor.PORT_ADVANCED_NET_FIELDS,
  portgroup_uuid: Minor.PORTGROUPS_SUBCONTROLLERS,
  physical_network: Minor.PORT_PHYSICAL_NETWORK,
  is_smartnic: Minor.PORT_SMARTNIC,
  name: Minor.PORT_NAME,
  description: Minor.PORT_DESCRIPTION,
  vendor: Minor.PORT_VENDOR,
  category: Minor.PORT_CATEGORY,
  available_for_dynamic_portgroup: Minor.DYNAMIC_PORTGROUP,
};

/** local_link_connection keys newer than the field itself, with the version that added each. */
export const LOCAL_LINK_KEY_VERSIONS: Readonly<Record<string, number>> = {
  network_type: Minor.LOCAL_LINK_NETWORK_TYPE,
  'vtep-logical-switch': Minor.OVN_VTEP,
  'vtep-physical-switch': Minor.OVN_VTEP,
};

export const PORT_FIELDS = [
  'uuid',
  'created_at',
  'updated_at',
  'address',
  'extra',
  'internal_info',
  'is_smartnic',
  'local_link_connection',
  'physical_network',
  'pxe_enabled',
  'node_uuid',
  'portgroup_uuid',
  'name',
  'description',
  'vendor',
  'category',
  'available_for_dynamic_portgroup',
] as const;

export function portFieldAllowed(field: string, minor: number): boolean {
  return minor >= (VERSIONED_PORT_FIELDS[field] ?? 0);
}

export function checkPortSortKey(key: string, minor: number): void {
  const since = VERSIONED_PORT_FIELDS[key];
  if (since !== undefined && minor < since) throw versionTooLow(since);
}

export function checkPortFields(fields: readonly string[] | undefined, minor: number): void {
  const unknown = (fields ?? []).filter((f) => !(PORT_FIELDS as readonly string[]).includes(f));
  if (unknown.length > 0) throw new InvalidParameterValue(`Field(s) "${unknown.join(', ')}" are not valid`);
  for (const field of fields ?? []) {
    const since = VERSIONED_PORT_FIELDS[field];
    if (since !== undefined && minor < since) throw versionTooLow(since);
  }
}

export interface PortViewOptions {
  minor: number;
  baseUrl: string;
  fields?: readonly string[];
}

/** A port as Ironic answers it at the request's microversion. */
export function portView(port: PortRecord, options: PortViewOptions): Record<string, unknown> {
  const full: Record<string, unknown> = {
    ...portDict(port),
    links: selfAndBookmark(options.baseUrl, 'ports', port.uuid),
    description: port.description,
    vendor: port.vendor,
    category: port.category,
    available_for_dynamic_portgroup: port.availableForDynamicPortgroup,
  };
  const view = pickFields(full, options.fields);
  for (const field of Object.keys(view)) {
    if (!portFieldAllowed(field, options.minor)) delete view[field];
  }
  // Ironic shows an OVN VTEP link as empty outside 1.90-1.104, the versions that accepted one.
  if (
    (options.minor < Minor.OVN_VTEP || options.minor >= Minor.OVN_VTEP_REMOVED) &&
    hasVtepKeys(view.local_link_connection)
  )
    view.local_link_connection = {};
  return view;
}

function hasVtepKeys(link: unknown): boolean {
  return (
    typeof link === 'object' &&
    link !== null &&
    Object.keys(link).some((key) => LOCAL_LINK_KEY_VERSIONS[key] === Minor.OVN_VTEP)
  );
}
