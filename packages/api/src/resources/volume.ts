import {
  InvalidParameterValue,
  VolumeConnectorNotFound,
  type VolumeConnectorRecord,
  VolumeTargetNotFound,
  type VolumeTargetRecord,
} from '@bmaas/common';
import type { Router } from 'express';
import { selfAndBookmark } from '../links.js';
import { onlyQuery } from '../list-query.js';
import { baseUrlOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { Minor } from '../versions.js';
import { checkNodeUnlocked, nodeFilter, nodeNamedInBody } from './node-owned.js';
import { nodeSubCollection, resourceRoutes } from './resource-router.js';
import {
  checkResourceVersion,
  patchedDocument,
  type ResourceContext,
  type ResourceSpec,
  saveChanges,
} from './resource-spec.js';

/** Connector types Ironic knows. */
const CONNECTOR_TYPES = ['iqn', 'ip', 'mac', 'wwnn', 'wwpn', 'port', 'portgroup'];

interface ConnectorBody {
  node_uuid: string;
  type: string;
  connector_id: string;
  uuid?: string | null;
  extra?: Record<string, unknown> | null;
}

const checkConnector = compileSchema<ConnectorBody>('connector', {
  type: 'object',
  properties: {
    node_uuid: schemaTypes.uuid,
    type: { type: 'string' },
    connector_id: { type: 'string', minLength: 1, maxLength: 255 },
    uuid: schemaTypes.nullableUuid,
    extra: schemaTypes.nullableObject,
  },
  required: ['connector_id', 'node_uuid', 'type'],
  additionalProperties: false,
});

interface TargetBody {
  node_uuid: string;
  volume_type: string;
  volume_id: string;
  boot_index: number;
  uuid?: string | null;
  properties?: Record<string, unknown> | null;
  extra?: Record<string, unknown> | null;
}

const checkTarget = compileSchema<TargetBody>('target', {
  type: 'object',
  properties: {
    node_uuid: schemaTypes.uuid,
    volume_type: { type: 'string', minLength: 1, maxLength: 64 },
    volume_id: { type: 'string', minLength: 1, maxLength: 36 },
    boot_index: { type: 'integer', minimum: 0 },
    uuid: schemaTypes.nullableUuid,
    properties: schemaTypes.nullableObject,
    extra: schemaTypes.nullableObject,
  },
  required: ['boot_index', 'node_uuid', 'volume_id', 'volume_type'],
  additionalProperties: false,
});

const COMMON_FIELDS = { uuid: 0, node_uuid: 0, extra: 0, created_at: 0, updated_at: 0 };

/**
 * Ironic changes volume connectors and targets of a node only while it is
 * powered off (or has no known power state), under the node's lock.
 */
async function checkNodeWritable(nodeId: number, ctx: ResourceContext): Promise<void> {
  await checkNodeUnlocked(nodeId, ctx);
  const node = await ctx.deps.stores.nodes.getById(nodeId);
  if (node?.powerState === 'power on') {
    throw new InvalidParameterValue(
      `The requested action "volume change" can not be performed on node "${node.uuid}" while it is in power state "power on".`,
    );
  }
}

/** The node a connector or target is on, and the one a patch moves it to, must both be writable. */
async function checkNodesWritable(
  nodeId: number,
  changes: Record<string, unknown>,
  ctx: ResourceContext,
): Promise<void> {
  await checkNodeWritable(nodeId, ctx);
  if (changes.nodeId !== undefined) await checkNodeWritable(changes.nodeId as number, ctx);
}

export function volumeConnectorSpec(deps: RouteDeps): ResourceSpec<VolumeConnectorRecord> {
  const store = deps.stores.volumeConnectors;
  const columnsOf = async (body: ConnectorBody, ctx: ResourceContext) => {
    if (!CONNECTOR_TYPES.includes(body.type)) {
      throw new InvalidParameterValue(
        `Invalid volume connector type ${body.type}: must be one of ${CONNECTOR_TYPES.join(', ')}.`,
      );
    }
    const node = await nodeNamedInBody(body.node_uuid, ctx);
    return { nodeId: node.id, type: body.type, connectorId: body.connector_id, extra: body.extra ?? {} };
  };
  return {
    path: 'volume/connectors',
    listKey: 'connectors',
    sinceMinor: Minor.VOLUME,
    fields: { ...COMMON_FIELDS, type: 0, connector_id: 0 },
    defaultFields: ['uuid', 'node_uuid', 'type', 'connector_id'],
    detailQuerySince: Minor.VOLUME,
    filters: { node: 0 },
    store,
    byName: false,
    notFound: (ident) => new VolumeConnectorNotFound(ident),
    listFilters: nodeFilter,
    view: (c) => ({
      uuid: c.uuid,
      node_uuid: c.nodeUuid,
      type: c.type,
      connector_id: c.connectorId,
      extra: c.extra,
    }),
    create: async (body, ctx) => {
      const connector = checkConnector(body);
      const columns = await columnsOf(connector, ctx);
      await checkNodeWritable(columns.nodeId, ctx);
      return store.create({ uuid: connector.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columns });
    },
    patch: async (c, body, ctx) => {
      const next = patchedDocument({
        document: { node_uuid: c.nodeUuid, type: c.type, connector_id: c.connectorId, extra: c.extra },
        body,
        defaults: { extra: {} },
        check: checkConnector,
        minor: ctx.minor,
      });
      return saveChanges(store, c, await columnsOf(next, ctx), (changes) => checkNodesWritable(c.nodeId, changes, ctx));
    },
    remove: async (c, ctx) => {
      await checkNodeWritable(c.nodeId, ctx);
      await store.destroy(c.id);
    },
  };
}

export function volumeTargetSpec(deps: RouteDeps): ResourceSpec<VolumeTargetRecord> {
  const store = deps.stores.volumeTargets;
  const columnsOf = async (body: TargetBody, ctx: ResourceContext) => {
    const node = await nodeNamedInBody(body.node_uuid, ctx);
    return {
      nodeId: node.id,
      volumeType: body.volume_type,
      volumeId: body.volume_id,
      bootIndex: body.boot_index,
      properties: body.properties ?? {},
      extra: body.extra ?? {},
    };
  };
  return {
    path: 'volume/targets',
    listKey: 'targets',
    sinceMinor: Minor.VOLUME,
    fields: { ...COMMON_FIELDS, volume_type: 0, properties: 0, boot_index: 0, volume_id: 0 },
    defaultFields: ['uuid', 'node_uuid', 'volume_type', 'boot_index', 'volume_id'],
    detailQuerySince: Minor.VOLUME,
    filters: { node: 0 },
    store,
    byName: false,
    notFound: (ident) => new VolumeTargetNotFound(ident),
    listFilters: nodeFilter,
    view: (t) => ({
      uuid: t.uuid,
      node_uuid: t.nodeUuid,
      volume_type: t.volumeType,
      properties: t.properties,
      boot_index: t.bootIndex,
      volume_id: t.volumeId,
      extra: t.extra,
    }),
    create: async (body, ctx) => {
      const target = checkTarget(body);
      const columns = await columnsOf(target, ctx);
      await checkNodeWritable(columns.nodeId, ctx);
      return store.create({ uuid: target.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columns });
    },
    patch: async (t, body, ctx) => {
      const next = patchedDocument({
        document: {
          node_uuid: t.nodeUuid,
          volume_type: t.volumeType,
          volume_id: t.volumeId,
          boot_index: t.bootIndex,
          properties: t.properties,
          extra: t.extra,
        },
        body,
        defaults: { properties: {}, extra: {} },
        check: checkTarget,
        minor: ctx.minor,
      });
      return saveChanges(store, t, await columnsOf(next, ctx), (changes) => checkNodesWritable(t.nodeId, changes, ctx));
    },
    remove: async (t, ctx) => {
      await checkNodeWritable(t.nodeId, ctx);
      await store.destroy(t.id);
    },
  };
}

/** GET /v1/volume and /v1/nodes/{node}/volume (1.32+): links to the connectors and targets. */
export function volumeRootRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  for (const path of ['/v1/volume', '/v1/nodes/:node/volume']) {
    router.get(path, onlyQuery(), async (req, res) => {
      checkResourceVersion({ sinceMinor: Minor.VOLUME }, req.context.minor);
      const base = req.params.node
        ? `nodes/${(await deps.nodes.find(req.params.node as string, req.context.minor)).uuid}/volume`
        : 'volume';
      const baseUrl = baseUrlOf(req, deps);
      res.json({
        links: selfAndBookmark(baseUrl, base, ''),
        connectors: selfAndBookmark(baseUrl, base, 'connectors'),
        targets: selfAndBookmark(baseUrl, base, 'targets'),
      });
    });
    allow(path, ['GET']);
  }
  return router;
}

export const volumeConnectorsRouter = (deps: RouteDeps) => resourceRoutes(volumeConnectorSpec(deps), deps);
export const volumeTargetsRouter = (deps: RouteDeps) => resourceRoutes(volumeTargetSpec(deps), deps);
/** GET /v1/nodes/{node}/volume/connectors and …/targets (1.32+). */
export const nodeVolumeRouters = (deps: RouteDeps) => [
  nodeSubCollection(volumeConnectorSpec(deps), deps, { sub: 'volume/connectors', sinceMinor: Minor.VOLUME }),
  nodeSubCollection(volumeTargetSpec(deps), deps, { sub: 'volume/targets', sinceMinor: Minor.VOLUME }),
];
