import { InvalidParameterValue, type NodeRecord, type PortgroupRecord, parseMac } from '@bmaas/common';
import type { PortListQuery } from '@bmaas/db';
import type { Request, Response, Router } from 'express';
import { requireMinor } from '../errors.js';
import { buildUrl } from '../links.js';
import {
  commaList,
  nextQuery,
  onlyQuery,
  PAGE_PARAMS,
  parsePage,
  queryString,
  requestedFields,
} from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { Minor } from '../versions.js';
import { checkPortFields, checkPortSortKey, PORT_DEFAULT_FIELDS, portView } from '../views/port-view.js';
import { checkedMarker } from './nodes.js';

/** Query parameters of port lists besides fields and detail. */
export const PORT_LIST_PARAMS = [...PAGE_PARAMS, 'node', 'node_uuid', 'address', 'portgroup', 'conductor_groups'];

export interface PortListScope {
  /** Only this node's ports (the /v1/nodes/{id}/ports sub-collection). */
  node?: NodeRecord;
  /** Only this portgroup's ports (the /v1/portgroups/{id}/ports sub-collection). */
  portgroup?: PortgroupRecord;
  detail: boolean;
  /** Path under /v1 for the next link. */
  resource: string;
}

/** `?conductor_groups=a,b` of port and portgroup lists (1.99): the groups, lower-cased as nodes store them. */
export function conductorGroupsFilter(query: Record<string, unknown>, minor: number): string[] | undefined {
  const value = queryString(query, 'conductor_groups');
  if (value === undefined) return undefined;
  requireMinor(minor, Minor.CONDUCTOR_GROUP_PORT_FILTER);
  return commaList(value.toLowerCase());
}

/** GET /v1/ports, /v1/ports/detail and a node's ports: filters, fields and pages. */
export async function listPorts(deps: RouteDeps, req: Request, res: Response, scope: PortListScope): Promise<void> {
  const minor = req.context.minor;
  const query = queryOf(req);
  const userFields = scope.detail ? undefined : queryString(query, 'fields');
  const fields = scope.detail ? undefined : requestedFields(query, minor, PORT_DEFAULT_FIELDS);
  if (userFields !== undefined) checkPortFields(fields, minor);
  const page = parsePage(query, deps.config.api.max_limit);
  checkPortSortKey(page.sortKey, minor);
  const filter: Partial<PortListQuery> = {};
  let node = scope.node;
  if (!node) {
    const ident = queryString(query, 'node_uuid') ?? queryString(query, 'node');
    if (ident !== undefined) node = await deps.nodes.find(ident, minor);
  }
  if (node) filter.nodeId = node.id;
  const address = queryString(query, 'address');
  if (address !== undefined) filter.address = parseMac(address);
  const portgroup = scope.portgroup ?? (await deps.ports.portgroupFilter(queryString(query, 'portgroup'), minor));
  if (portgroup) filter.portgroupUuid = portgroup.uuid;
  const conductorGroups = conductorGroupsFilter(query, minor);
  if (conductorGroups !== undefined) {
    if (node || portgroup || address !== undefined) {
      throw new InvalidParameterValue(
        'Filtering by conductor_groups cannot be combined with node_ident, portgroup_ident, or node address filters.',
      );
    }
    filter.conductorGroups = conductorGroups;
  }
  if (page.marker !== undefined) await deps.ports.find(checkedMarker(page.marker));
  const ports = await deps.stores.ports.list({ ...filter, ...page });
  const baseUrl = baseUrlOf(req, deps);
  const body: Record<string, unknown> = { ports: ports.map((port) => portView(port, { minor, baseUrl, fields })) };
  const last = ports[ports.length - 1];
  if (last && ports.length === page.limit) {
    const params: Record<string, string | undefined> = { sort_key: page.sortKey, sort_dir: page.sortDir };
    for (const name of ['node', 'node_uuid', 'address', 'portgroup', 'conductor_groups', 'detail', 'fields'])
      params[name] = queryString(query, name);
    body.next = buildUrl(baseUrl, scope.resource, nextQuery(params, page.limit, last.uuid));
  }
  res.json(body);
}

/** /v1/ports: the collection and one port. */
export function portsRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  router.get('/v1/ports', onlyQuery(...PORT_LIST_PARAMS, 'fields', 'detail'), (req, res) =>
    listPorts(deps, req, res, { detail: false, resource: 'ports' }),
  );
  router.get('/v1/ports/detail', onlyQuery(...PORT_LIST_PARAMS), (req, res) =>
    listPorts(deps, req, res, { detail: true, resource: 'ports/detail' }),
  );

  router.post('/v1/ports', onlyQuery(), async (req, res) => {
    const port = await deps.ports.create(req.body, req.context.minor);
    req.context.logger.info('port created', { port: port.uuid, address: port.address, nodeUuid: port.nodeUuid });
    res.location(buildUrl(baseUrlOf(req, deps), 'ports', port.uuid));
    res.status(201).json(portView(port, { minor: req.context.minor, baseUrl: baseUrlOf(req, deps) }));
  });

  router.get('/v1/ports/:ident', onlyQuery('fields'), async (req, res) => {
    const minor = req.context.minor;
    const port = await deps.ports.find(req.params.ident as string, minor);
    const query = queryOf(req);
    const fields = queryString(query, 'fields') !== undefined ? requestedFields(query, minor, undefined) : undefined;
    checkPortFields(fields, minor);
    res.json(portView(port, { minor, baseUrl: baseUrlOf(req, deps), fields }));
  });

  router.patch('/v1/ports/:ident', onlyQuery(), async (req, res) => {
    const port = await deps.ports.find(req.params.ident as string, req.context.minor);
    const updated = await deps.ports.patch(port, req.body, req.context.minor);
    req.context.logger.info('port updated', { port: port.uuid });
    res.json(portView(updated, { minor: req.context.minor, baseUrl: baseUrlOf(req, deps) }));
  });

  router.delete('/v1/ports/:ident', onlyQuery(), async (req, res) => {
    const port = await deps.ports.find(req.params.ident as string);
    await deps.ports.delete(port);
    req.context.logger.info('port deleted', { port: port.uuid, address: port.address });
    res.status(204).end();
  });

  allow('/v1/ports', ['GET', 'POST']);
  allow('/v1/ports/detail', ['GET']);
  allow('/v1/ports/:ident', ['GET', 'PATCH', 'DELETE']);
  return router;
}
