import {
  InvalidParameterValue,
  PortgroupNotEmpty,
  PortgroupNotFound,
  type PortgroupRecord,
  parseMac,
  ResourceNotFound,
} from '@bmaas/common';
import type { Router } from 'express';
import { selfAndBookmark } from '../links.js';
import { commaList, onlyQuery } from '../list-query.js';
import type { RouteDeps } from '../route-deps.js';
import { listPorts, PORT_LIST_PARAMS } from '../routes/ports.js';
import { compileSchema, schemaTypes, toBoolean } from '../validation.js';
import { Minor } from '../versions.js';
import { checkNodeUnlocked, nodeFilter, nodeNamedInBody } from './node-owned.js';
import { nodeSubCollection, resourceOf, resourceRoutes } from './resource-router.js';
import {
  checkWriteVersions,
  isResourceName,
  patchedDocument,
  type ResourceContext,
  type ResourceSpec,
  saveChanges,
} from './resource-spec.js';

interface PortgroupBody {
  node_uuid: string;
  uuid?: string | null;
  name?: string | null;
  address?: string | null;
  mode?: string | null;
  properties?: Record<string, unknown> | null;
  standalone_ports_supported?: boolean | string | null;
  extra?: Record<string, unknown> | null;
  physical_network?: string | null;
  category?: string | null;
}

const checkPortgroup = compileSchema<PortgroupBody>('portgroup', {
  type: 'object',
  properties: {
    node_uuid: schemaTypes.uuid,
    uuid: schemaTypes.nullableUuid,
    name: schemaTypes.nullableString(255),
    address: schemaTypes.nullableString(64),
    mode: schemaTypes.nullableString(255),
    properties: schemaTypes.nullableObject,
    standalone_ports_supported: schemaTypes.nullableBooleanLike,
    extra: schemaTypes.nullableObject,
    physical_network: schemaTypes.nullableString(64),
    category: schemaTypes.nullableString(80),
  },
  required: ['node_uuid'],
  additionalProperties: false,
});

const WRITE_VERSIONS = {
  mode: Minor.PORTGROUP_MODE_PROPERTIES,
  properties: Minor.PORTGROUP_MODE_PROPERTIES,
  physical_network: Minor.PORTGROUP_PHYSICAL_NETWORK,
  category: Minor.PORTGROUP_CATEGORY,
};

/** The stored columns a checked body describes; a portgroup without a mode gets [DEFAULT]default_portgroup_mode. */
async function columnsOf(body: PortgroupBody, ctx: ResourceContext) {
  if (body.name != null && !isResourceName(body.name)) {
    throw new InvalidParameterValue(`Expected name for name: ${body.name}`);
  }
  const node = await nodeNamedInBody(body.node_uuid, ctx);
  return {
    nodeId: node.id,
    name: body.name ?? null,
    address: body.address == null ? null : parseMac(body.address),
    mode: body.mode ?? ctx.deps.config.DEFAULT.default_portgroup_mode,
    properties: body.properties ?? {},
    standalonePortsSupported:
      body.standalone_ports_supported == null ? true : toBoolean(body.standalone_ports_supported),
    extra: body.extra ?? {},
    physicalNetwork: body.physical_network ?? null,
    category: body.category ?? null,
  };
}

export function portgroupSpec(deps: RouteDeps): ResourceSpec<PortgroupRecord> {
  const store = deps.stores.portgroups;
  return {
    path: 'portgroups',
    listKey: 'portgroups',
    sinceMinor: Minor.PORTGROUPS,
    fields: {
      uuid: 0,
      name: 0,
      address: 0,
      node_uuid: 0,
      standalone_ports_supported: 0,
      internal_info: 0,
      extra: 0,
      mode: Minor.PORTGROUP_MODE_PROPERTIES,
      properties: Minor.PORTGROUP_MODE_PROPERTIES,
      created_at: 0,
      updated_at: 0,
      ports: Minor.PORTGROUPS_SUBCONTROLLERS,
      physical_network: Minor.PORTGROUP_PHYSICAL_NETWORK,
      category: Minor.PORTGROUP_CATEGORY,
      dynamic_portgroup: Minor.DYNAMIC_PORTGROUP,
    },
    defaultFields: ['uuid', 'address', 'name'],
    filters: {
      node: 0,
      address: 0,
      conductor_groups: Minor.CONDUCTOR_GROUP_PORT_FILTER,
      shard: Minor.PORTGROUP_SHARD_FILTER,
    },
    store,
    byName: true,
    notFound: (ident) => new PortgroupNotFound(ident),
    listFilters: async (query, ctx) => {
      // Ironic takes one of these at a time.
      if (['node', 'address', 'shard', 'conductor_groups'].filter((name) => query[name] !== undefined).length > 1) {
        throw new InvalidParameterValue('Filtering by node, address, or shard simultaneously is not supported.');
      }
      return {
        ...(await nodeFilter(query, ctx)),
        ...(query.address === undefined ? {} : { address: parseMac(query.address) }),
        ...(query.conductor_groups === undefined
          ? {}
          : { 'node.conductorGroup': commaList(query.conductor_groups.toLowerCase()) }),
        ...(query.shard === undefined ? {} : { 'node.shard': commaList(query.shard) }),
      };
    },
    view: (pg, ctx) => ({
      uuid: pg.uuid,
      name: pg.name,
      address: pg.address,
      node_uuid: pg.nodeUuid,
      standalone_ports_supported: pg.standalonePortsSupported,
      internal_info: pg.internalInfo,
      extra: pg.extra,
      mode: pg.mode,
      properties: pg.properties,
      physical_network: pg.physicalNetwork,
      category: pg.category,
      dynamic_portgroup: pg.dynamicPortgroup,
      ports: selfAndBookmark(ctx.baseUrl, 'portgroups', `${pg.uuid}/ports`),
    }),
    create: async (body, ctx) => {
      const pg = checkPortgroup(body);
      checkWriteVersions(pg as unknown as Record<string, unknown>, WRITE_VERSIONS, ctx.minor);
      const columns = await columnsOf(pg, ctx);
      await checkNodeUnlocked(columns.nodeId, ctx);
      return store.create({ uuid: pg.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columns });
    },
    patch: async (pg, body, ctx) => {
      const next = patchedDocument({
        document: {
          node_uuid: pg.nodeUuid,
          name: pg.name,
          address: pg.address,
          mode: pg.mode,
          properties: pg.properties,
          standalone_ports_supported: pg.standalonePortsSupported,
          extra: pg.extra,
          physical_network: pg.physicalNetwork,
          category: pg.category,
        },
        body,
        defaults: {
          name: null,
          address: null,
          mode: null,
          properties: {},
          extra: {},
          standalone_ports_supported: true,
          physical_network: null,
          category: null,
        },
        check: checkPortgroup,
        writeVersions: WRITE_VERSIONS,
        minor: ctx.minor,
      });
      const updated = await saveChanges(store, pg, await columnsOf(next, ctx), async (changes) => {
        await checkNodeUnlocked(pg.nodeId, ctx);
        if (changes.nodeId === undefined) return;
        if ((await store.countPorts(pg.uuid)) > 0) {
          throw new InvalidParameterValue(`Portgroup ${pg.uuid} has ports: its node cannot change.`);
        }
        await checkNodeUnlocked(changes.nodeId as number, ctx);
      });
      // A portgroup's ports are on its physical network, as Ironic's conductor keeps them (1.102).
      if (updated.physicalNetwork !== pg.physicalNetwork) {
        await ctx.deps.stores.ports.setPortgroupPhysicalNetwork(pg.uuid, updated.physicalNetwork);
      }
      return updated;
    },
    remove: async (pg, ctx) => {
      await checkNodeUnlocked(pg.nodeId, ctx);
      if ((await store.countPorts(pg.uuid)) > 0) throw new PortgroupNotEmpty(pg.uuid);
      await store.destroy(pg.id);
    },
  };
}

/** /v1/portgroups and a portgroup's ports (1.24+, listed as GET /v1/ports lists them). */
export function portgroupsRouter(deps: RouteDeps): Router {
  const spec = portgroupSpec(deps);
  return resourceRoutes(spec, deps, (router, allow) => {
    for (const detail of [false, true]) {
      const suffix = detail ? 'ports/detail' : 'ports';
      const params = detail ? PORT_LIST_PARAMS : [...PORT_LIST_PARAMS, 'fields', 'detail'];
      router.get(`/v1/portgroups/:ident/${suffix}`, onlyQuery(...params), async (req, res) => {
        const portgroup = await resourceOf(spec, req);
        if (req.context.minor < Minor.PORTGROUPS_SUBCONTROLLERS) throw new ResourceNotFound();
        await listPorts(deps, req, res, { detail, resource: `portgroups/${portgroup.uuid}/${suffix}`, portgroup });
      });
      allow(`/v1/portgroups/:ident/${suffix}`, ['GET']);
    }
  });
}

/** GET /v1/nodes/{node}/portgroups (1.24+). */
export const nodePortgroupsRouter = (deps: RouteDeps) =>
  nodeSubCollection(portgroupSpec(deps), deps, { sub: 'portgroups', sinceMinor: Minor.PORTGROUPS_SUBCONTROLLERS });
