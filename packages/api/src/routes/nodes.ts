import { ALL_PROVISION_STATES, InvalidParameterValue, type NodeRecord } from '@bmaas/common';
import type { NodeListQuery } from '@bmaas/db';
import type { Request, Response, Router } from 'express';
import { requireMinor, requireResourceMinor } from '../errors.js';
import { buildUrl } from '../links.js';
import {
  commaList,
  nextQuery,
  onlyQuery,
  optionalBoolean,
  PAGE_PARAMS,
  parsePage,
  queryString,
  requestedFields,
} from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { isUuid } from '../validation.js';
import { Minor } from '../versions.js';
import {
  checkNodeFields,
  checkNodeSortKey,
  NODE_DEFAULT_FIELDS,
  nodeFieldAllowed,
  nodeView,
} from '../views/node-view.js';
import { listPorts, PORT_LIST_PARAMS } from './ports.js';

/** Filters of GET /v1/nodes with the version that added each. */
function nodeFilters(query: Record<string, unknown>, minor: number): Partial<NodeListQuery> {
  const filters: Partial<NodeListQuery> = {};
  const provisionState = queryString(query, 'provision_state');
  if (provisionState !== undefined) {
    requireMinor(minor, Minor.PROVISION_STATE_FILTER);
    if (!(ALL_PROVISION_STATES as readonly string[]).includes(provisionState)) {
      throw new InvalidParameterValue(`Provision state "${provisionState}" is not valid`);
    }
    filters.provisionState = provisionState;
  }
  const versioned = [
    ['driver', 'driver', Minor.DRIVER_FILTER],
    ['resource_class', 'resourceClass', Minor.RESOURCE_CLASS],
    ['fault', 'fault', Minor.FAULT],
    ['conductor_group', 'conductorGroup', Minor.CONDUCTOR_GROUP],
    ['owner', 'owner', Minor.OWNER],
    ['description_contains', 'descriptionContains', Minor.DESCRIPTION],
    ['lessee', 'lessee', Minor.LESSEE],
    ['project', 'project', Minor.LESSEE],
    ['instance_name', 'instanceName', Minor.INSTANCE_NAME],
  ] as const;
  for (const [param, key, since] of versioned) {
    const value = queryString(query, param);
    if (value === undefined) continue;
    requireMinor(minor, since);
    filters[key] = value;
  }
  const instanceUuid = queryString(query, 'instance_uuid');
  if (instanceUuid !== undefined) {
    if (!isUuid(instanceUuid)) throw new InvalidParameterValue(`Expected UUID for instance_uuid: ${instanceUuid}`);
    filters.instanceUuid = instanceUuid.toLowerCase();
  }
  const shard = queryString(query, 'shard');
  if (shard !== undefined) {
    requireMinor(minor, Minor.SHARDS);
    filters.shards = commaList(shard);
  }
  const booleans = [
    ['maintenance', 'maintenance', 0],
    ['associated', 'associated', 0],
    ['retired', 'retired', Minor.RETIRED],
    ['sharded', 'sharded', Minor.SHARDS],
    ['include_children', 'includeChildren', Minor.PARENT_NODE],
  ] as const;
  for (const [param, key, since] of booleans) {
    const value = optionalBoolean(query, param);
    if (value === undefined) continue;
    requireMinor(minor, since);
    filters[key] = value;
  }
  const parentNode = queryString(query, 'parent_node');
  if (parentNode !== undefined) {
    requireMinor(minor, Minor.PARENT_NODE);
    filters.parentNode = parentNode;
  }
  return filters;
}

const FILTER_PARAMS = [
  'provision_state',
  'driver',
  'resource_class',
  'fault',
  'conductor_group',
  'conductor',
  'owner',
  'lessee',
  'project',
  'description_contains',
  'instance_uuid',
  'instance_name',
  'maintenance',
  'associated',
  'retired',
  'shard',
  'sharded',
  'include_children',
  'parent_node',
];

/** The answer's fields ask for traits (every field, or ?fields= naming them). */
function wantsTraits(minor: number, fields: readonly string[] | undefined): boolean {
  return nodeFieldAllowed('traits', minor) && (!fields || fields.includes('traits'));
}
/** Query parameters of node lists besides fields and detail. */
export const NODE_LIST_PARAMS = [...PAGE_PARAMS, ...FILTER_PARAMS];

export async function nodeJson(
  deps: RouteDeps,
  req: Request,
  node: NodeRecord,
  fields?: readonly string[],
  traits?: readonly string[],
): Promise<Record<string, unknown>> {
  const minor = req.context.minor;
  const wantsConductor = nodeFieldAllowed('conductor', minor) && (!fields || fields.includes('conductor'));
  const conductor = wantsConductor ? await deps.nodes.conductorFor(node) : null;
  const shownTraits = traits ?? (wantsTraits(minor, fields) ? await deps.stores.nodeTraits.list(node.id) : undefined);
  return nodeView(node, { minor, baseUrl: baseUrlOf(req, deps), fields, conductor, traits: shownTraits });
}

/** ?conductor= (1.49): like Ironic, the page is filtered by the ring after the query. */
async function servedBy(deps: RouteDeps, nodes: NodeRecord[], conductor: string | undefined): Promise<NodeRecord[]> {
  if (conductor === undefined) return nodes;
  const owners = await Promise.all(nodes.map((node) => deps.nodes.conductorFor(node)));
  return nodes.filter((_, index) => owners[index] === conductor);
}

/** Lists nodes; `scope` narrows to a chassis's nodes (GET /v1/chassis/{id}/nodes) and names the list's path. */
export async function listNodes(
  deps: RouteDeps,
  req: Request,
  res: Response,
  detail: boolean,
  scope: { chassisUuid?: string; resource?: string } = {},
): Promise<void> {
  const minor = req.context.minor;
  const query = queryOf(req);
  const userFields = detail ? undefined : queryString(query, 'fields');
  const fields = detail ? undefined : requestedFields(query, minor, NODE_DEFAULT_FIELDS);
  if (userFields !== undefined) checkNodeFields(fields, minor);
  const page = parsePage(query, deps.config.api.max_limit);
  checkNodeSortKey(page.sortKey, minor);
  const filters = nodeFilters(query, minor);
  const conductor = queryString(query, 'conductor');
  if (conductor !== undefined) requireMinor(minor, Minor.CONDUCTORS);
  if (page.marker !== undefined) await deps.nodes.find(checkedMarker(page.marker), minor);
  if (scope.chassisUuid !== undefined) filters.chassisUuid = scope.chassisUuid;
  const listed = await deps.stores.nodes.list({ ...filters, ...page });
  const nodes = await servedBy(deps, listed, conductor);
  // One query for the traits of the whole page, and only when the answer shows them.
  const traits = wantsTraits(minor, fields) ? await deps.stores.nodeTraits.listMany(nodes.map((n) => n.id)) : undefined;
  const body: Record<string, unknown> = {
    nodes: await Promise.all(nodes.map((node) => nodeJson(deps, req, node, fields, traits?.get(node.id) ?? []))),
  };
  const last = listed[listed.length - 1];
  if (last && listed.length === page.limit) {
    const params: Record<string, string | undefined> = { sort_key: page.sortKey, sort_dir: page.sortDir };
    for (const name of [...FILTER_PARAMS, 'detail', 'fields']) params[name] = queryString(query, name);
    body.next = buildUrl(
      baseUrlOf(req, deps),
      scope.resource ?? (detail ? 'nodes/detail' : 'nodes'),
      nextQuery(params, page.limit, last.uuid),
    );
  }
  res.json(body);
}

export function checkedMarker(marker: string): string {
  if (!isUuid(marker)) throw new InvalidParameterValue(`Expected UUID for marker: ${marker}`);
  return marker;
}

/** /v1/nodes: the collection, one node, its ports and its maintenance flag. */
export function nodesRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  const listParams = [...PAGE_PARAMS, ...FILTER_PARAMS];
  router.get('/v1/nodes', onlyQuery(...listParams, 'fields', 'detail'), (req, res) => listNodes(deps, req, res, false));
  router.get('/v1/nodes/detail', onlyQuery(...listParams), (req, res) => listNodes(deps, req, res, true));

  router.post('/v1/nodes', onlyQuery(), async (req, res) => {
    const node = await deps.nodes.create(req.body, req.context.minor);
    req.context.logger.info('node created', { nodeUuid: node.uuid, driver: node.driver });
    res.location(buildUrl(baseUrlOf(req, deps), 'nodes', node.uuid));
    // A node is created without traits (they are set through /traits): no query for them.
    const traits = wantsTraits(req.context.minor, undefined) ? [] : undefined;
    res.status(201).json(await nodeJson(deps, req, node, undefined, traits));
  });

  router.get('/v1/nodes/:ident', onlyQuery('fields'), async (req, res) => {
    const minor = req.context.minor;
    const node = await deps.nodes.find(req.params.ident as string, minor);
    const fields =
      queryString(queryOf(req), 'fields') !== undefined ? requestedFields(queryOf(req), minor, undefined) : undefined;
    checkNodeFields(fields, minor);
    res.json(await nodeJson(deps, req, node, fields));
  });

  router.patch('/v1/nodes/:ident', onlyQuery('reset_interfaces'), async (req, res) => {
    const minor = req.context.minor;
    const node = await deps.nodes.find(req.params.ident as string, minor);
    const reset = optionalBoolean(queryOf(req), 'reset_interfaces');
    const updated = await deps.nodes.patch(node, req.body, minor, reset);
    req.context.logger.info('node updated', { nodeUuid: node.uuid });
    res.json(await nodeJson(deps, req, updated));
  });

  router.delete('/v1/nodes/:ident', onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await deps.nodes.delete(node);
    req.context.logger.info('node deleted', { nodeUuid: node.uuid });
    res.status(204).end();
  });

  router.get('/v1/nodes/:ident/ports', onlyQuery(...PORT_LIST_PARAMS, 'fields', 'detail'), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await listPorts(deps, req, res, { node, detail: false, resource: `nodes/${req.params.ident}/ports` });
  });
  router.get('/v1/nodes/:ident/ports/detail', onlyQuery(...PORT_LIST_PARAMS), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await listPorts(deps, req, res, {
      node,
      detail: true,
      resource: `nodes/${req.params.ident}/ports/detail`,
    });
  });

  router.put('/v1/nodes/:ident/maintenance', onlyQuery('reason'), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const reason = maintenanceReason(req);
    await deps.nodes.setMaintenance(node, true, reason);
    req.context.logger.info('node maintenance set', { nodeUuid: node.uuid, reason });
    res.status(202).end();
  });
  router.delete('/v1/nodes/:ident/maintenance', onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await deps.nodes.setMaintenance(node, false, null);
    req.context.logger.info('node maintenance cleared', { nodeUuid: node.uuid });
    res.status(202).end();
  });

  router.get('/v1/nodes/:ident/children', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.PARENT_NODE);
    const parent = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const children = await deps.stores.nodes.list({
      parentNode: parent.uuid,
      limit: deps.config.api.max_limit,
      sortKey: 'id',
      sortDir: 'asc',
    });
    res.json({
      children: children.map((child) => child.uuid),
      links: [{ href: buildUrl(baseUrlOf(req, deps), 'nodes', `?parent_node=${parent.uuid}`), rel: 'children' }],
    });
  });

  allow('/v1/nodes', ['GET', 'POST']);
  allow('/v1/nodes/detail', ['GET']);
  allow('/v1/nodes/:ident', ['GET', 'PATCH', 'DELETE']);
  allow('/v1/nodes/:ident/ports', ['GET']);
  allow('/v1/nodes/:ident/maintenance', ['PUT', 'DELETE']);
  allow('/v1/nodes/:ident/children', ['GET']);
  return router;
}

/** `reason` from the JSON body or the query string, as Ironic accepts both. */
function maintenanceReason(req: Request): string | null {
  const body = req.body as unknown;
  if (body !== undefined && body !== null) {
    if (typeof body !== 'object' || Array.isArray(body))
      throw new InvalidParameterValue('Expected a JSON object body.');
    const { reason, ...rest } = body as Record<string, unknown>;
    const unexpected = Object.keys(rest)[0];
    if (unexpected) throw new InvalidParameterValue(`Unknown argument: "${unexpected}"`);
    if (reason !== undefined && reason !== null && typeof reason !== 'string') {
      throw new InvalidParameterValue('Expected a string for reason.');
    }
    if (typeof reason === 'string') return reason;
  }
  return queryString(queryOf(req), 'reason') ?? null;
}
