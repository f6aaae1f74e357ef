import {
  type BmaasConfig,
  DELETE_ALLOWED_STATES,
  DuplicateName,
  INTERFACE_TYPES,
  type InterfaceType,
  InvalidParameterValue,
  NodeAssociated,
  NodeInWrongState,
  NodeLocked,
  NodeNotFound,
  NodeProtected,
  type NodeRecord,
  NoValidHost,
  ProvisionState,
  parseRootDeviceHints,
  STABLE_STATES,
  TemporaryFailure,
} from '@bmaas/common';
import type { NewNode, NodeChanges, Stores } from '@bmaas/db';
import type { ConductorClient } from '@bmaas/rpc-client';
import { CachedHardwareTypeCatalog, INTERFACE_FIELDS } from './driver-catalog.js';
import { requireMinor, versionTooLow } from './errors.js';
import { applyJsonPatch, type PatchOperation, parsePatch, patchValues, rootField, touches } from './json-patch.js';
import { checkNodeName, isValidLogicalName, normaliseConductorGroup } from './node-names.js';
import {
  NODE_CREATE_SCHEMA,
  NODE_FIELD_DEFAULTS,
  NODE_PATCH_FIELDS,
  NODE_SCHEMA,
  NODE_WRITE_VERSIONS,
  type NodeBody,
} from './node-schemas.js';
import { compileSchema, isUuid, toBoolean } from './validation.js';
import { Minor } from './versions.js';

const S = ProvisionState;
/** States a node in a transition may still be updated in (Ironic's UPDATE_ALLOWED_STATES). */
export const UPDATE_ALLOWED_STATES: ReadonlySet<string> = new Set([
  S.DEPLOY_FAILED,
  S.INSPECTING,
  S.INSPECT_FAILED,
  S.INSPECT_WAIT,
  S.CLEAN_FAILED,
  S.ERROR,
  S.VERIFYING,
  S.ADOPT_FAILED,
  S.RESCUE_FAILED,
  S.UNRESCUE_FAILED,
  S.SERVICING,
  S.SERVICE_HOLD,
  S.SERVICE_FAILED,
]);
/** States in which interfaces (and an existing resource class) may change without maintenance mode. */
const INTERFACE_UPDATE_STATES: readonly string[] = [S.ENROLL, S.INSPECTING, S.INSPECT_WAIT, S.MANAGEABLE, S.AVAILABLE];

const checkNodeBody = compileSchema<NodeBody>('node', NODE_SCHEMA);
const checkNewNodeBody = compileSchema<NodeBody>('node', NODE_CREATE_SCHEMA);

/** Ironic's args.uuid: `Expected UUID for <field>: <value>`. */
function checkUuidField(field: string, value: string | null | undefined): void {
  if (value !== null && value !== undefined && !isUuid(value)) {
    throw new InvalidParameterValue(`Expected UUID for ${field}: ${value}`);
  }
}

const optionalBoolean = (value: boolean | string | null | undefined, fallback: boolean): boolean =>
  value === undefined || value === null ? fallback : toBoolean(value);
const nullableBoolean = (value: boolean | string | null | undefined): boolean | null =>
  value === undefined || value === null ? null : toBoolean(value);

export interface NodeServiceDeps {
  config: BmaasConfig;
  stores: Stores;
  conductors: ConductorClient;
}

/** The stored fields a validated node body describes (its interfaces as asked for, not yet resolved). */
type NodeFields = Pick<
  NodeRecord,
  (typeof SCALAR_FIELDS)[number] | (typeof JSON_FIELDS)[number] | 'maintenance' | 'bootMode' | 'secureBoot'
> & { requestedInterfaces: Record<InterfaceType, string | null>; chassisUuid: string | null };

/** Scalar fields a patch compares and writes as they are. */
const SCALAR_FIELDS = [
  'name',
  'driver',
  'instanceUuid',
  'instanceName',
  'conductorGroup',
  'resourceClass',
  'description',
  'automatedClean',
  'owner',
  'lessee',
  'protected',
  'protectedReason',
  'retired',
  'retiredReason',
  'disablePowerOff',
  'shard',
  'parentNode',
] as const;
const JSON_FIELDS = ['driverInfo', 'instanceInfo', 'properties', 'extra', 'networkData'] as const;

function fieldsOf(body: NodeBody, defaultGroup: string): NodeFields {
  const requestedInterfaces = {} as Record<InterfaceType, string | null>;
  for (const kind of INTERFACE_TYPES) requestedInterfaces[kind] = body[`${kind}_interface`] ?? null;
  return {
    name: body.name ?? null,
    driver: body.driver,
    requestedInterfaces,
    driverInfo: body.driver_info ?? {},
    instanceInfo: body.instance_info ?? {},
    instanceUuid: body.instance_uuid?.toLowerCase() ?? null,
    instanceName: body.instance_name ?? null,
    properties: body.properties ?? {},
    extra: body.extra ?? {},
    conductorGroup: normaliseConductorGroup(body.conductor_group || defaultGroup),
    resourceClass: body.resource_class ?? null,
    description: body.description ?? null,
    automatedClean: nullableBoolean(body.automated_clean),
    maintenance: optionalBoolean(body.maintenance, false),
    owner: body.owner ?? null,
    lessee: body.lessee ?? null,
    protected: optionalBoolean(body.protected, false),
    protectedReason: body.protected_reason ?? null,
    retired: optionalBoolean(body.retired, false),
    retiredReason: body.retired_reason ?? null,
    networkData: body.network_data ?? {},
    disablePowerOff: optionalBoolean(body.disable_power_off, false),
    shard: body.shard ?? null,
    parentNode: body.parent_node ?? null,
    bootMode: body.boot_mode ?? null,
    secureBoot: nullableBoolean(body.secure_boot),
    chassisUuid: body.chassis_uuid?.toLowerCase() ?? null,
  };
}

/** The patchable view of a stored node (secrets unmasked: the patch works on real values). */
function patchDocument(node: NodeRecord): Record<string, unknown> {
  const interfaces: Record<string, string> = {};
  for (const kind of INTERFACE_TYPES) interfaces[`${kind}_interface`] = node[INTERFACE_FIELDS[kind]];
  return {
    name: node.name,
    driver: node.driver,
    ...interfaces,
    driver_info: node.driverInfo,
    instance_info: node.instanceInfo,
    instance_uuid: node.instanceUuid,
    instance_name: node.instanceName,
    properties: node.properties,
    extra: node.extra,
    conductor_group: node.conductorGroup,
    resource_class: node.resourceClass,
    description: node.description,
    automated_clean: node.automatedClean,
    maintenance: node.maintenance,
    owner: node.owner,
    lessee: node.lessee,
    protected: node.protected,
    protected_reason: node.protectedReason,
    retired: node.retired,
    retired_reason: node.retiredReason,
    network_data: node.networkData,
    disable_power_off: node.disablePowerOff,
    shard: node.shard,
    parent_node: node.parentNode,
    chassis_uuid: node.chassisUuid ?? null,
  };
}

/** Root device hints (properties.root_device, instance_info.root_device) are checked when they are set. */
function checkRootDeviceHints(fields: Pick<NodeFields, 'properties' | 'instanceInfo'>): void {
  for (const hints of [fields.properties.root_device, fields.instanceInfo.root_device]) {
    if (hints !== undefined) parseRootDeviceHints(hints);
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Node rules of the REST API: lookup, create, patch, delete, maintenance. Throws domain errors. */
export class NodeService {
  private readonly catalog: CachedHardwareTypeCatalog;

  constructor(private readonly deps: NodeServiceDeps) {
    this.catalog = new CachedHardwareTypeCatalog(deps.stores.conductors, deps.config);
  }

  /** A node by UUID, or by name from 1.5 on. */
  async find(ident: string, minor: number): Promise<NodeRecord> {
    let node: NodeRecord | undefined;
    if (isUuid(ident)) {
      node = await this.deps.stores.nodes.getByUuid(ident.toLowerCase());
    } else if (minor >= Minor.NODE_NAME) {
      if (!isValidLogicalName(ident, minor)) {
        throw new InvalidParameterValue(`Expected a logical name or UUID but received ${ident}.`);
      }
      node = await this.deps.stores.nodes.getByName(ident);
    }
    if (!node) throw new NodeNotFound(ident);
    return node;
  }

  /** Hostname of the owning conductor, or null when no alive conductor serves the node. */
  async conductorFor(node: NodeRecord): Promise<string | null> {
    try {
      return await this.deps.conductors.hostFor(node);
    } catch (error) {
      if (error instanceof NoValidHost || error instanceof TemporaryFailure) return null;
      throw error;
    }
  }

  async create(body: unknown, minor: number): Promise<NodeRecord> {
    return this.deps.stores.nodes.create(await this.newNode(body, minor));
  }

  /**
   * The node a create body describes, checked as POST /v1/nodes checks it
   * (schema, the request's microversion, names, parent, root device hints,
   * a conductor for its driver and group, its interfaces resolved); writes
   * nothing. Create and bulk enrolment both store what this returns.
   */
  async newNode(body: unknown, minor: number): Promise<NewNode> {
    const checked = checkNewNodeBody(body);
    for (const [field, since] of Object.entries(NODE_WRITE_VERSIONS)) {
      const value = checked[field as keyof NodeBody];
      const empty = field === 'conductor_group' ? value === '' || value === undefined || value === null : value == null;
      if (!empty && minor < since) throw versionTooLow(since);
    }
    checkUuidField('uuid', checked.uuid);
    checkUuidField('instance_uuid', checked.instance_uuid);
    const fields = fieldsOf(checked, this.deps.config.DEFAULT.default_conductor_group);
    if (fields.retiredReason && !fields.retired) {
      throw new InvalidParameterValue('The retired_reason field can only be set when retired is True');
    }
    if (fields.parentNode !== null) fields.parentNode = await this.parentUuid(fields.parentNode, minor);
    checkRootDeviceHints(fields);
    if (fields.name !== null)
      checkNodeName(fields.name, minor, `Cannot create node with invalid name '${fields.name}'`);
    const uuid = checked.uuid?.toLowerCase() ?? crypto.randomUUID();
    // The ring decides whether any alive conductor serves this driver and group (NoValidHost otherwise).
    await this.deps.conductors.hostFor({ uuid, driver: fields.driver, conductorGroup: fields.conductorGroup });
    const interfaces = await this.catalog.resolve(fields.driver, fields.requestedInterfaces);
    return {
      uuid,
      name: fields.name,
      driver: fields.driver,
      // Ironic starts nodes in enroll from 1.11; a client of an older version expects them available.
      provisionState: minor < Minor.ENROLL_STATE ? S.AVAILABLE : S.ENROLL,
      ...interfaces,
      driverInfo: fields.driverInfo,
      instanceInfo: fields.instanceInfo,
      instanceUuid: fields.instanceUuid,
      properties: fields.properties,
      extra: fields.extra,
      conductorGroup: fields.conductorGroup,
      resourceClass: fields.resourceClass,
      description: fields.description,
      automatedClean: fields.automatedClean,
      maintenance: fields.maintenance,
      owner: fields.owner,
      lessee: fields.lessee,
      retired: fields.retired,
      retiredReason: fields.retiredReason,
      networkData: fields.networkData,
      disablePowerOff: fields.disablePowerOff,
      shard: fields.shard,
      parentNode: fields.parentNode,
      bootMode: fields.bootMode,
      secureBoot: fields.secureBoot,
      chassisUuid: fields.chassisUuid,
    };
  }

  /** parent_node as stored: the uuid of an existing node, named by uuid or name. */
  private async parentUuid(ident: string, minor: number, child?: NodeRecord): Promise<string> {
    let parent: NodeRecord;
    try {
      parent = await this.find(ident, Math.max(minor, Minor.NODE_NAME));
    } catch (error) {
      if (error instanceof NodeNotFound || error instanceof InvalidParameterValue) {
        throw new InvalidParameterValue(`Node ${ident} could not be found.`);
      }
      throw error;
    }
    if (child && parent.uuid === child.uuid) {
      throw new InvalidParameterValue(`Node ${child.uuid} cannot be its own parent node.`);
    }
    return parent.uuid;
  }

  /**
   * Enrols a machine discovery found: a node in enroll with the given driver
   * and interfaces (defaults for the kinds not named) and a port per NIC, in
   * one transaction; when one of the MACs is already a port, that node is
   * returned instead (`created` false). A name already taken is dropped.
   */
  async enrolDiscovered(
    fields: { driver: string; name: string | null; interfaces: Partial<Record<InterfaceType, string>> },
    nics: ReadonlyArray<{ mac: string; pxe: boolean }>,
  ): Promise<{ node: NodeRecord; created: boolean }> {
    const uuid = crypto.randomUUID();
    const conductorGroup = normaliseConductorGroup(this.deps.config.DEFAULT.default_conductor_group);
    await this.deps.conductors.hostFor({ uuid, driver: fields.driver, conductorGroup });
    const interfaces = await this.catalog.resolve(fields.driver, fields.interfaces);
    const ports = nics.map((nic) => ({ address: nic.mac, pxeEnabled: nic.pxe }));
    const node = { uuid, driver: fields.driver, conductorGroup, ...interfaces };
    try {
      return await this.deps.stores.nodes.createWithPortsUnlessKnown({ ...node, name: fields.name }, ports);
    } catch (error) {
      if (!(error instanceof DuplicateName)) throw error;
      return this.deps.stores.nodes.createWithPortsUnlessKnown({ ...node, name: null }, ports);
    }
  }

  async patch(node: NodeRecord, body: unknown, minor: number, resetInterfaces?: boolean): Promise<NodeRecord> {
    const ops = parsePatch(body, NODE_PATCH_FIELDS, minor);
    for (const op of ops) {
      const since = NODE_WRITE_VERSIONS[rootField(op.path)];
      if (since !== undefined && minor < since && op.op !== 'remove') throw versionTooLow(since);
    }
    if (resetInterfaces !== undefined) {
      requireMinor(minor, Minor.RESET_INTERFACES);
      if (resetInterfaces && !touches(ops, 'driver')) {
        throw new InvalidParameterValue(
          "The reset_interfaces parameter can only be used when changing the node's driver.",
        );
      }
    }
    this.checkUpdatable(node, ops, minor);
    for (const name of patchValues(ops, '/name')) {
      if (name !== null && typeof name === 'string') {
        checkNodeName(name, minor, `Node ${node.uuid}: Cannot change name to invalid name '${name}'`);
      }
    }
    const patched = checkNodeBody(applyJsonPatch(patchDocument(node), ops, NODE_FIELD_DEFAULTS));
    checkUuidField('instance_uuid', patched.instance_uuid);
    const next = fieldsOf(patched, '');
    // Nova names the instance in instance_info.display_name: an unnamed instance takes that name, as Ironic's.
    const displayName = next.instanceInfo.display_name;
    if (next.instanceName === null && typeof displayName === 'string' && displayName !== '') {
      if (!sameJson(next.instanceInfo, node.instanceInfo)) next.instanceName = displayName;
    }
    if (next.parentNode !== null && next.parentNode !== node.parentNode) {
      next.parentNode = await this.parentUuid(next.parentNode, minor, node);
    }
    checkProtection(node, next, ops);
    checkRootDeviceHints(next);
    // Ironic routes every update through the owning conductor: no conductor, no update.
    await this.deps.conductors.hostFor({ uuid: node.uuid, driver: next.driver, conductorGroup: next.conductorGroup });
    // Ironic lets a node leave its chassis from 1.25 on.
    if (node.chassisUuid && next.chassisUuid === null) requireMinor(minor, Minor.UNSET_CHASSIS_UUID);
    const changes = await this.changesFor(node, next, ops, resetInterfaces === true);
    if (Object.keys(changes).length === 0) return node;
    return this.save(node, changes);
  }

  private checkUpdatable(node: NodeRecord, ops: readonly PatchOperation[], minor: number): void {
    const onlyRemovesInstance = ops.length === 1 && ops[0]?.op === 'remove' && ops[0].path === '/instance_uuid';
    if (node.maintenance && onlyRemovesInstance) return;
    if (node.targetProvisionState && !UPDATE_ALLOWED_STATES.has(node.provisionState)) {
      throw new NodeInWrongState(`Node ${node.uuid} can not be updated while a state transition is in progress.`);
    }
    if (node.provisionState === S.INSPECTING && minor >= Minor.INSPECT_WAIT) {
      throw new NodeInWrongState(`Cannot update node "${node.uuid}" while it is in state "${S.INSPECTING}".`);
    }
  }

  private async changesFor(
    node: NodeRecord,
    next: NodeFields,
    ops: readonly PatchOperation[],
    resetInterfaces: boolean,
  ): Promise<NodeChanges> {
    const changes: NodeChanges = {};
    for (const key of SCALAR_FIELDS) if (next[key] !== node[key]) Object.assign(changes, { [key]: next[key] });
    if (next.chassisUuid !== (node.chassisUuid ?? null)) changes.chassisUuid = next.chassisUuid;
    if (next.maintenance !== node.maintenance) {
      changes.maintenance = next.maintenance;
      // Leaving maintenance clears the reason and the fault, as upstream.
      if (!next.maintenance) Object.assign(changes, { maintenanceReason: null, fault: null });
    }
    for (const key of JSON_FIELDS) {
      if (!sameJson(next[key], node[key])) changes[key] = next[key];
    }
    const driverChanged = changes.driver !== undefined;
    const interfaceChanged = INTERFACE_TYPES.filter((kind) => touches(ops, `${kind}_interface`));
    const busy = !node.maintenance && !INTERFACE_UPDATE_STATES.includes(node.provisionState);
    if (busy && interfaceChanged.length > 0) {
      throw new NodeInWrongState(
        `Node ${node.uuid} can not have ${interfaceChanged[0]}_interface updated unless it is in one of allowed (${INTERFACE_UPDATE_STATES.join(', ')}) states or in maintenance mode. Current state is '${node.provisionState}'.`,
      );
    }
    if (driverChanged && !node.maintenance && !STABLE_STATES.has(node.provisionState as ProvisionState)) {
      throw new NodeInWrongState(
        `Node ${node.uuid} can not have its driver updated in state '${node.provisionState}' unless it is in maintenance mode.`,
      );
    }
    if (changes.resourceClass !== undefined && node.resourceClass && busy) {
      throw new NodeInWrongState(
        `Node ${node.uuid} can not have resource_class updated unless it is in one of allowed (${INTERFACE_UPDATE_STATES.join(', ')}) states. Current state is '${node.provisionState}'.`,
      );
    }
    if (changes.instanceUuid && node.instanceUuid) throw new NodeAssociated(node.uuid, node.instanceUuid);
    if (driverChanged || interfaceChanged.length > 0) {
      const requested: Record<InterfaceType, string | null> = { ...next.requestedInterfaces };
      if (resetInterfaces) {
        for (const kind of INTERFACE_TYPES) if (!interfaceChanged.includes(kind)) requested[kind] = null;
      }
      const resolved = await this.catalog.resolve(next.driver, requested);
      for (const kind of INTERFACE_TYPES) {
        const field = INTERFACE_FIELDS[kind];
        if (resolved[field] !== node[field]) changes[field] = resolved[field];
      }
    }
    return changes;
  }

  async delete(node: NodeRecord): Promise<void> {
    this.checkDeletable(node);
    const { nodes, nodeLocks } = this.deps.stores;
    const holder = this.deps.config.DEFAULT.host;
    // Take the exclusive lock so no conductor starts work on a node being deleted.
    if (!(await nodeLocks.reserve(node.id, holder))) throw await this.lockedOrGone(node);
    let deleted = false;
    try {
      const current = await nodes.getById(node.id);
      if (!current) throw new NodeNotFound(node.uuid);
      this.checkDeletable(current);
      deleted = await nodes.destroy(node.id);
    } finally {
      if (!deleted) await nodeLocks.release(node.id, holder);
    }
  }

  private checkDeletable(node: NodeRecord): void {
    if (node.protected) throw new NodeProtected(node.uuid);
    if (!node.maintenance && node.instanceUuid) throw new NodeAssociated(node.uuid, node.instanceUuid);
    if (!node.maintenance && !DELETE_ALLOWED_STATES.has(node.provisionState as ProvisionState)) {
      throw new NodeInWrongState(
        `Can not delete node "${node.uuid}" while it is in provision state "${node.provisionState}". Valid provision states to start deletion are: ${[...DELETE_ALLOWED_STATES].join(', ')}, or set the node in maintenance mode.`,
      );
    }
  }

  async setMaintenance(node: NodeRecord, maintenance: boolean, reason: string | null): Promise<NodeRecord> {
    await this.deps.conductors.hostFor(node);
    return this.save(node, {
      maintenance,
      maintenanceReason: maintenance ? reason : null,
      ...(maintenance ? {} : { fault: null }),
    });
  }

  /** Writes changes unless a conductor holds the node's lock (Ironic updates under the exclusive lock). */
  private async save(node: NodeRecord, changes: NodeChanges): Promise<NodeRecord> {
    const updated = await this.deps.stores.nodes.update(node.id, changes, { reservation: null });
    if (updated) return updated;
    throw await this.lockedOrGone(node);
  }

  private async lockedOrGone(node: NodeRecord): Promise<Error> {
    const current = await this.deps.stores.nodes.getById(node.id);
    if (!current) return new NodeNotFound(node.uuid);
    return new NodeLocked(node.uuid, current.reservation ?? 'unknown');
  }
}

/**
 * Ironic's rules for protected and retired (checked on the patched values):
 * protection only in active or rescue, a reason only with the flag, retired
 * not in available; clearing a flag clears its reason.
 */
function checkProtection(node: NodeRecord, next: NodeFields, ops: readonly PatchOperation[]): void {
  if (touches(ops, 'protected')) {
    if (!next.protected) next.protectedReason = null;
    else if (node.provisionState !== S.ACTIVE && node.provisionState !== S.RESCUE) {
      throw new NodeInWrongState(
        `Node ${node.uuid} can only be made protected in provision states 'active' or 'rescue', the current state is '${node.provisionState}'`,
      );
    }
  }
  if (touches(ops, 'protected_reason') && next.protectedReason && !next.protected) {
    throw new InvalidParameterValue('The protected_reason field can only be set when protected is True');
  }
  if (touches(ops, 'retired')) {
    if (!next.retired) next.retiredReason = null;
    else if (node.provisionState === S.AVAILABLE) {
      throw new NodeInWrongState(
        `Node ${node.uuid} can not have 'retired' set in provision state 'available', the current state is '${node.provisionState}'`,
      );
    }
  }
  if (touches(ops, 'retired_reason') && next.retiredReason && !next.retired) {
    throw new InvalidParameterValue('The retired_reason field can only be set when retired is True');
  }
}
