import {
  InvalidApiVersion,
  InvalidParameterValue,
  NodeLocked,
  PortgroupNotFound,
  type PortgroupRecord,
  PortNotFound,
  type PortRecord,
  parseMac,
  portDict,
  ResourceConflict,
} from '@bmaas/common';
import type { NewPort, PortChanges, Stores } from '@bmaas/db';
import { versionTooLow } from './errors.js';
import { applyJsonPatch, parsePatch, rootField } from './json-patch.js';
import { isResourceName } from './resources/resource-spec.js';
import { compileSchema, isUuid, schemaTypes, toBoolean } from './validation.js';
import { Minor } from './versions.js';
import { LOCAL_LINK_KEY_VERSIONS } from './views/port-view.js';

/** A local_link_connection shape: the keys it must hold. */
function linkShape(required: readonly string[]) {
  return { properties: Object.fromEntries(required.map((key) => [key, { type: 'string' }])), required };
}

/**
 * local_link_connection as Ironic checks it: the known keys only, the OVN
 * VTEP pair together (1.90), and empty or one of these shapes: a switch port
 * (port_id, switch_id), a smart NIC (port_id, hostname), an unmanaged network
 * (network_type "unmanaged"), an OVN VTEP switch (port_id and both vtep keys).
 * The keys are checked first, so an unknown key is what an error names.
 */
const LOCAL_LINK_CONNECTION = {
  type: ['object', 'null'],
  allOf: [
    {
      properties: {
        port_id: { type: 'string' },
        switch_id: { type: 'string' },
        hostname: { type: 'string' },
        switch_info: { type: 'string' },
        network_type: { type: 'string', enum: ['managed', 'unmanaged'] },
        'vtep-logical-switch': { type: 'string' },
        'vtep-physical-switch': { type: 'string' },
      },
      additionalProperties: false,
      dependencies: {
        'vtep-logical-switch': ['vtep-physical-switch'],
        'vtep-physical-switch': ['vtep-logical-switch'],
      },
    },
    {
      anyOf: [
        { type: 'null' },
        { type: 'object', maxProperties: 0 },
        linkShape(['port_id', 'switch_id']),
        linkShape(['port_id', 'hostname']),
        { properties: { network_type: { const: 'unmanaged' } }, required: ['network_type'] },
        linkShape(['port_id', 'vtep-logical-switch', 'vtep-physical-switch']),
      ],
    },
  ],
} as const;

/**
 * Throws 406 when `link` holds a key newer than the request's version, or an
 * OVN VTEP key from 1.105 on, which took them back.
 */
function checkLocalLinkVersion(link: Record<string, unknown> | null | undefined, minor: number): void {
  for (const key of Object.keys(link ?? {})) {
    const since = LOCAL_LINK_KEY_VERSIONS[key];
    if (since !== undefined && minor < since) throw versionTooLow(since);
    if (since === Minor.OVN_VTEP && minor >= Minor.OVN_VTEP_REMOVED) {
      throw new InvalidApiVersion(`local_link_connection key ${key} is not acceptable from API version 1.105 on.`);
    }
  }
}

const PORT_PROPERTIES = {
  address: { type: 'string' },
  node_uuid: schemaTypes.uuid,
  /** The node by UUID or name, instead of node_uuid (1.94). */
  node_ident: { type: 'string' },
  uuid: schemaTypes.nullableUuid,
  pxe_enabled: schemaTypes.nullableBooleanLike,
  physical_network: schemaTypes.nullableString(64),
  local_link_connection: LOCAL_LINK_CONNECTION,
  extra: schemaTypes.nullableObject,
  portgroup_uuid: schemaTypes.nullableUuid,
  is_smartnic: schemaTypes.nullableBooleanLike,
  name: schemaTypes.nullableString(255),
  description: schemaTypes.nullableString(255),
  vendor: schemaTypes.nullableString(32),
  category: schemaTypes.nullableString(80),
  available_for_dynamic_portgroup: { type: 'boolean' },
} as const;

interface PortBody {
  address: string;
  node_uuid?: string;
  node_ident?: string;
  uuid?: string | null;
  pxe_enabled?: boolean | string | null;
  physical_network?: string | null;
  local_link_connection?: Record<string, unknown> | null;
  extra?: Record<string, unknown> | null;
  portgroup_uuid?: string | null;
  is_smartnic?: boolean | string | null;
  name?: string | null;
  description?: string | null;
  vendor?: string | null;
  category?: string | null;
  available_for_dynamic_portgroup?: boolean;
}

const checkPortBody = compileSchema<PortBody>('port', {
  type: 'object',
  properties: PORT_PROPERTIES,
  required: ['address'],
  oneOf: [
    { properties: { node_uuid: PORT_PROPERTIES.node_uuid }, required: ['node_uuid'] },
    { properties: { node_ident: PORT_PROPERTIES.node_ident }, required: ['node_ident'] },
  ],
  additionalProperties: false,
});

/** A port after PATCH: the node always by node_uuid. */
const checkPatchedPort = compileSchema<PortBody & { node_uuid: string }>('port', {
  type: 'object',
  properties: PORT_PROPERTIES,
  required: ['address', 'node_uuid'],
  additionalProperties: false,
});

const PORT_PATCH_FIELDS = Object.keys(PORT_PROPERTIES)
  .filter((field) => field !== 'uuid' && field !== 'node_ident')
  .sort();
const PORT_FIELD_DEFAULTS = {
  pxe_enabled: true,
  physical_network: null,
  local_link_connection: {},
  extra: {},
  portgroup_uuid: null,
  is_smartnic: false,
  name: null,
  description: null,
  vendor: null,
  category: null,
  available_for_dynamic_portgroup: true,
};
const PORT_WRITE_VERSIONS: Readonly<Record<string, number>> = {
  pxe_enabled: Minor.PORT_ADVANCED_NET_FIELDS,
  local_link_connection: Minor.PORT_ADVANCED_NET_FIELDS,
  physical_network: Minor.PORT_PHYSICAL_NETWORK,
  portgroup_uuid: Minor.PORTGROUPS_SUBCONTROLLERS,
  is_smartnic: Minor.PORT_SMARTNIC,
  name: Minor.PORT_NAME,
  node_ident: Minor.PORT_NODE_IDENT,
  description: Minor.PORT_DESCRIPTION,
  vendor: Minor.PORT_VENDOR,
  category: Minor.PORT_CATEGORY,
  available_for_dynamic_portgroup: Minor.DYNAMIC_PORTGROUP,
};

function checkPhysicalNetwork(value: string | null | undefined): void {
  if (value === '') throw new InvalidParameterValue('A non-empty value is required when setting physical_network');
}

/** A POST /v1/ports body checked against the schema and the request's microversion, its MAC canonical. */
function checkedCreateBody(body: unknown, minor: number): PortBody {
  const port = checkPortBody(body);
  for (const [field, since] of Object.entries(PORT_WRITE_VERSIONS)) {
    if (port[field as keyof PortBody] != null && minor < since) throw versionTooLow(since);
  }
  checkLocalLinkVersion(port.local_link_connection, minor);
  checkPhysicalNetwork(port.physical_network);
  return { ...port, address: parseMac(port.address) };
}

/** The free-text fields of a checked body and its dynamic portgroup flag, as stored. */
function describingFields(port: PortBody) {
  return {
    description: port.description ?? null,
    vendor: port.vendor ?? null,
    category: port.category ?? null,
    availableForDynamicPortgroup: port.available_for_dynamic_portgroup ?? true,
  };
}

/** Port rules of the REST API. MACs are accepted in every form parseMac knows and stored canonical. */
export class PortService {
  constructor(private readonly stores: Stores) {}

  /** A port by UUID, or by name from 1.88 on. */
  async find(ident: string, minor = 1): Promise<PortRecord> {
    const byName = minor >= Minor.PORT_NAME && isResourceName(ident);
    if (!isUuid(ident) && !byName) {
      throw new InvalidParameterValue(`Expected a logical name or UUID but received ${ident}.`);
    }
    const port = isUuid(ident)
      ? await this.stores.ports.getByUuid(ident.toLowerCase())
      : await this.stores.ports.getByName(ident);
    if (!port) throw new PortNotFound(ident);
    return port;
  }

  async create(body: unknown, minor: number): Promise<PortRecord> {
    const port = checkedCreateBody(body, minor);
    const nodeId = await this.nodeIdOf(port.node_ident ?? (port.node_uuid as string));
    return this.stores.ports.create({ ...(await this.newPort(port, nodeId)), nodeId });
  }

  /**
   * A port of a node that the same bulk enrolment creates (`nodeUuid`, not
   * stored yet), checked as POST /v1/ports checks a port: the body is a
   * create body without node_uuid and node_ident (the port's node is the one
   * it is listed under). Writes nothing.
   */
  async newPortOfNewNode(body: unknown, nodeUuid: string, minor: number): Promise<Omit<NewPort, 'nodeId'>> {
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
      for (const field of ['node_uuid', 'node_ident']) {
        if (Object.hasOwn(body, field)) {
          throw new InvalidParameterValue(`A port listed under its node takes no ${field}: it is that node's.`);
        }
      }
      return this.newPort(checkedCreateBody({ ...body, node_uuid: nodeUuid }, minor), undefined);
    }
    return this.newPort(checkedCreateBody(body, minor), undefined);
  }

  /** The stored fields of a checked create body, of the node `nodeId` (undefined: a node not stored yet). */
  private async newPort(port: PortBody, nodeId: number | undefined): Promise<Omit<NewPort, 'nodeId'>> {
    const membership = await this.membership(port, nodeId);
    return {
      ...membership,
      uuid: port.uuid?.toLowerCase() ?? crypto.randomUUID(),
      address: port.address,
      pxeEnabled: port.pxe_enabled == null ? true : toBoolean(port.pxe_enabled),
      physicalNetwork: port.physical_network ?? null,
      localLinkConnection: port.local_link_connection ?? {},
      extra: port.extra ?? {},
      ...describingFields(port),
    };
  }

  async patch(port: PortRecord, body: unknown, minor: number): Promise<PortRecord> {
    const ops = parsePatch(body, PORT_PATCH_FIELDS, minor);
    for (const op of ops) {
      const since = PORT_WRITE_VERSIONS[rootField(op.path)];
      if (since !== undefined && minor < since) throw versionTooLow(since);
    }
    // The patch applies to the port's dict, less what no patch may touch (its paths are refused above).
    const {
      uuid: _uuid,
      created_at: _created,
      updated_at: _updated,
      internal_info: _internal,
      ...dict
    } = portDict(port);
    const doc = {
      ...dict,
      description: port.description,
      vendor: port.vendor,
      category: port.category,
      available_for_dynamic_portgroup: port.availableForDynamicPortgroup,
    };
    const next = checkPatchedPort(applyJsonPatch(doc, ops, PORT_FIELD_DEFAULTS));
    checkPhysicalNetwork(next.physical_network);
    const changes: PortChanges = {};
    const address = parseMac(next.address);
    if (address !== port.address) changes.address = address;
    const nodeId = await this.nodeIdOf(next.node_uuid);
    if (nodeId !== port.nodeId) changes.nodeId = nodeId;
    const pxeEnabled = next.pxe_enabled == null ? true : toBoolean(next.pxe_enabled);
    if (pxeEnabled !== port.pxeEnabled) changes.pxeEnabled = pxeEnabled;
    if ((next.physical_network ?? null) !== port.physicalNetwork)
      changes.physicalNetwork = next.physical_network ?? null;
    const localLink = next.local_link_connection ?? {};
    if (JSON.stringify(localLink) !== JSON.stringify(port.localLinkConnection)) {
      checkLocalLinkVersion(localLink, minor);
      changes.localLinkConnection = localLink;
    }
    const extra = next.extra ?? {};
    if (JSON.stringify(extra) !== JSON.stringify(port.extra)) changes.extra = extra;
    for (const [key, value] of Object.entries(describingFields(next)) as [keyof PortChanges, unknown][]) {
      if (value !== port[key as keyof PortRecord]) Object.assign(changes, { [key]: value });
    }
    const membership = await this.membership(next, nodeId);
    for (const key of ['portgroupUuid', 'isSmartnic', 'name'] as const) {
      if (membership[key] !== (port[key] ?? null)) Object.assign(changes, { [key]: membership[key] });
    }
    if (Object.keys(changes).length === 0) return port;
    await this.checkNodeUnlocked(port.nodeId);
    if (changes.nodeId !== undefined) await this.checkNodeUnlocked(changes.nodeId);
    const updated = await this.stores.ports.update(port.id, changes);
    if (!updated) throw new PortNotFound(port.uuid);
    return updated;
  }

  async delete(port: PortRecord): Promise<void> {
    await this.checkNodeUnlocked(port.nodeId);
    if (!(await this.stores.ports.destroy(port.id))) throw new PortNotFound(port.uuid);
  }

  /** `?portgroup=<uuid or name>` of a port list (1.24+). */
  async portgroupFilter(ident: string | undefined, minor: number): Promise<PortgroupRecord | undefined> {
    if (ident === undefined) return undefined;
    if (minor < Minor.PORTGROUPS_SUBCONTROLLERS) throw versionTooLow(Minor.PORTGROUPS_SUBCONTROLLERS);
    const portgroup = isUuid(ident)
      ? await this.stores.portgroups.getByUuid(ident)
      : await this.stores.portgroups.getByName(ident);
    if (!portgroup) throw new PortgroupNotFound(ident);
    return portgroup;
  }

  /**
   * The portgroup, smartNIC flag and name a port body sets, checked as Ironic
   * checks them: the portgroup is on the port's node, a smartNIC port names
   * its switch port and host, a name is a logical name.
   */
  private async membership(
    body: PortBody,
    nodeId: number | undefined,
  ): Promise<{ portgroupUuid: string | null; isSmartnic: boolean; name: string | null }> {
    let portgroupUuid: string | null = null;
    if (body.portgroup_uuid != null) {
      const portgroup = await this.stores.portgroups.getByUuid(body.portgroup_uuid);
      if (!portgroup) throw new InvalidParameterValue(`Portgroup ${body.portgroup_uuid} could not be found.`);
      if (portgroup.nodeId !== nodeId) {
        throw new InvalidParameterValue('Port can not be added to a portgroup on a different node.');
      }
      if (!portgroup.standalonePortsSupported && body.pxe_enabled != null && toBoolean(body.pxe_enabled)) {
        throw new ResourceConflict(
          `Port group ${portgroup.uuid} doesn't support standalone ports. This port cannot be created as a member of that portgroup as the port's 'pxe_enabled' field was set to True.`,
        );
      }
      portgroupUuid = portgroup.uuid;
    }
    const isSmartnic = body.is_smartnic == null ? false : toBoolean(body.is_smartnic);
    const link = body.local_link_connection ?? {};
    if (isSmartnic && (!link.port_id || !link.hostname)) {
      throw new InvalidParameterValue('Smart NIC port must have port_id and hostname in local_link_connection');
    }
    if (body.name != null && !isResourceName(body.name)) {
      throw new InvalidParameterValue(`Expected name for name: ${body.name}`);
    }
    return { portgroupUuid, isSmartnic, name: body.name ?? null };
  }

  /**
   * The id of the node a port names (node_uuid, or node_ident by UUID or name
   * from 1.94); a missing node is a bad request here, not a missing resource.
   */
  private async nodeIdOf(ident: string): Promise<number> {
    let id: number | undefined;
    if (isUuid(ident)) id = await this.stores.nodes.idOf('uuid', ident.toLowerCase());
    else if (isResourceName(ident)) id = await this.stores.nodes.idOf('name', ident);
    else throw new InvalidParameterValue(`Expected a logical name or UUID but received ${ident}.`);
    if (id === undefined) throw new InvalidParameterValue(`Node ${ident} could not be found.`);
    return id;
  }

  /** Ironic changes ports under their node's exclusive lock: refuse while a conductor holds it. */
  private async checkNodeUnlocked(nodeId: number): Promise<void> {
    const node = await this.stores.nodes.getById(nodeId);
    if (node?.reservation) throw new NodeLocked(node.uuid, node.reservation);
  }
}
