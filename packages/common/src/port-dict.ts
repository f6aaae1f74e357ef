import type { JsonObject, PortRecord } from './records.js';

/** A timestamp as Python's isoformat() writes it (what Ironic clients and agents see). */
export function ironicTimestamp(value: Date | null | undefined): string | null {
  if (!value) return null;
  return value.toISOString().replace('Z', '+00:00');
}

/** A port as Ironic's port dict (snake_case, every field). */
export interface PortDict extends JsonObject {
  uuid: string;
  created_at: string | null;
  updated_at: string | null;
  address: string;
  extra: JsonObject;
  internal_info: JsonObject;
  is_smartnic: boolean;
  local_link_connection: JsonObject;
  physical_network: string | null;
  pxe_enabled: boolean;
  node_uuid: string;
  portgroup_uuid: string | null;
  name: string | null;
}

/**
 * A port as Ironic's port dict: what the REST API shows (before microversion
 * filtering and links), what a PATCH applies to, and what the agent is sent
 * with its step commands.
 */
export function portDict(port: PortRecord): PortDict {
  return {
    uuid: port.uuid,
    created_at: ironicTimestamp(port.createdAt),
    updated_at: ironicTimestamp(port.updatedAt),
    address: port.address,
    extra: port.extra,
    internal_info: {},
    is_smartnic: port.isSmartnic ?? false,
    local_link_connection: port.localLinkConnection,
    physical_network: port.physicalNetwork,
    pxe_enabled: port.pxeEnabled,
    node_uuid: port.nodeUuid,
    portgroup_uuid: port.portgroupUuid ?? null,
    name: port.name,
  };
}
