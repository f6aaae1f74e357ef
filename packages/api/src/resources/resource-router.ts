import { ResourceNotFound } from '@bmaas/common';
import type { Request, Response, Router } from 'express';
import { buildUrl } from '../links.js';
import { nextQuery, onlyQuery, PAGE_PARAMS, parsePage, queryString, requestedFields } from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { checkedMarker } from '../routes/nodes.js';
import { Minor } from '../versions.js';
import {
  checkFields,
  checkResourceVersion,
  findResource,
  type ResourceContext,
  type ResourceSpec,
  renderResource,
  type StoredResource,
} from './resource-spec.js';

export function contextOf(deps: RouteDeps, req: Request): ResourceContext {
  return { deps, minor: req.context.minor, baseUrl: baseUrlOf(req, deps), requestId: req.context.requestId };
}

/** The list's filters the request names, each checked against its version. */
function filterValues(
  spec: ResourceSpec<never>,
  query: Record<string, unknown>,
  minor: number,
): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, since] of Object.entries(spec.filters)) {
    const value = queryString(query, name);
    if (value === undefined) continue;
    checkFields({ fields: { [name]: since } }, [name], minor);
    values[name] = value;
  }
  return values;
}

/**
 * A list of a resource (the collection, its /detail, or a sub-collection when
 * `scope` adds column filters): ?fields=, ?detail=, filters, pages and the next link.
 */
export async function listResources<R extends StoredResource>(
  spec: ResourceSpec<R>,
  req: Request,
  res: Response,
  options: { deps: RouteDeps; detail: boolean; resource: string; scope?: Record<string, number | string> },
): Promise<void> {
  const ctx = contextOf(options.deps, req);
  checkResourceVersion(spec, ctx.minor);
  const query = queryOf(req);
  // A resource that took ?detail= before 1.43 (volume lists) is read as at 1.43 for that parameter.
  const earlyDetail = spec.detailQuerySince !== undefined && ctx.minor >= spec.detailQuerySince;
  const detailMinor = earlyDetail ? Math.max(ctx.minor, Minor.DETAIL_QUERY) : ctx.minor;
  const fields = options.detail ? undefined : requestedFields(query, detailMinor, spec.defaultFields);
  if (!options.detail && queryString(query, 'fields') !== undefined) checkFields(spec, fields ?? [], ctx.minor);
  const page = parsePage(query, options.deps.config.api.max_limit);
  if (spec.fields[page.sortKey] !== undefined) checkFields(spec, [page.sortKey], ctx.minor);
  const filters = await spec.listFilters(filterValues(spec as never, query, ctx.minor), ctx);
  if (page.marker !== undefined) await findResource(spec, checkedMarker(page.marker));
  const records = await spec.store.list({ ...filters, ...options.scope }, page);
  const body: Record<string, unknown> = {
    [spec.listKey]: records.map((record) => renderResource(spec, record, ctx, fields)),
  };
  const last = records[records.length - 1];
  if (last && records.length === page.limit) {
    const params: Record<string, string | undefined> = { sort_key: page.sortKey, sort_dir: page.sortDir };
    for (const name of [...Object.keys(spec.filters), 'detail', 'fields']) params[name] = queryString(query, name);
    body.next = buildUrl(ctx.baseUrl, options.resource, nextQuery(params, page.limit, last.uuid));
  }
  res.json(body);
}

/** Answers one record, with the request's `?fields=`. */
export function sendOne<R extends StoredResource>(
  spec: ResourceSpec<R>,
  deps: RouteDeps,
  req: Request,
  res: Response,
  record: R,
): void {
  const ctx = contextOf(deps, req);
  const query = queryOf(req);
  const fields = queryString(query, 'fields') !== undefined ? requestedFields(query, ctx.minor, undefined) : undefined;
  if (fields) checkFields(spec, fields, ctx.minor);
  res.json(renderResource(spec, record, ctx, fields));
}

/** Looks a resource up by the path's identifier, after the version gate. */
export async function resourceOf<R extends StoredResource>(spec: ResourceSpec<R>, req: Request): Promise<R> {
  checkResourceVersion(spec, req.context.minor);
  return findResource(spec, req.params.ident as string);
}

/** GET/POST /v1/<path>, GET /v1/<path>/detail, GET/PATCH/DELETE /v1/<path>/<ident>. */
export function resourceRoutes<R extends StoredResource>(
  spec: ResourceSpec<R>,
  deps: RouteDeps,
  extend?: (router: Router, allow: (path: string, methods: readonly string[]) => void) => void,
): Router {
  const { router, allow } = resourceRouter();
  const base = `/v1/${spec.path}`;
  const listParams = [...PAGE_PARAMS, ...Object.keys(spec.filters)];
  const label = spec.path.replace('/', ' ');

  router.get(base, onlyQuery(...listParams, 'fields', 'detail'), (req, res) =>
    listResources(spec, req, res, { deps, detail: false, resource: spec.path }),
  );
  router.get(`${base}/detail`, onlyQuery(...listParams), (req, res) =>
    listResources(spec, req, res, { deps, detail: true, resource: `${spec.path}/detail` }),
  );
  router.post(base, onlyQuery(), async (req, res) => {
    const ctx = contextOf(deps, req);
    checkResourceVersion(spec, ctx.minor);
    const record = await spec.create(req.body, ctx);
    req.context.logger.info(`${label} created`, { uuid: record.uuid });
    res.location(buildUrl(ctx.baseUrl, spec.path, record.uuid));
    res.status(201).json(renderResource(spec, record, ctx));
  });
  extend?.(router, allow);
  router.get(`${base}/:ident`, onlyQuery('fields'), async (req, res) => {
    sendOne(spec, deps, req, res, await resourceOf(spec, req));
  });
  router.patch(`${base}/:ident`, onlyQuery(), async (req, res) => {
    const ctx = contextOf(deps, req);
    const record = await resourceOf(spec, req);
    const updated = await spec.patch(record, req.body, ctx);
    req.context.logger.info(`${label} updated`, { uuid: record.uuid });
    res.json(renderResource(spec, updated, ctx));
  });
  router.delete(`${base}/:ident`, onlyQuery(), async (req, res) => {
    const ctx = contextOf(deps, req);
    const record = await resourceOf(spec, req);
    await spec.remove(record, ctx);
    req.context.logger.info(`${label} deleted`, { uuid: record.uuid });
    res.status(204).end();
  });

  allow(base, ['GET', 'POST']);
  allow(`${base}/detail`, ['GET']);
  allow(`${base}/:ident`, ['GET', 'PATCH', 'DELETE']);
  return router;
}

/**
 * A node's own list of a resource (GET /v1/nodes/{node}/<sub> and its
 * /detail), from the version that added it (404 below, as Ironic).
 */
export function nodeSubCollection<R extends StoredResource>(
  spec: ResourceSpec<R>,
  deps: RouteDeps,
  options: { sub: string; sinceMinor: number },
): Router {
  const { router, allow } = resourceRouter();
  const listParams = [...PAGE_PARAMS, ...Object.keys(spec.filters)];
  for (const detail of [false, true]) {
    const suffix = detail ? `${options.sub}/detail` : options.sub;
    const path = `/v1/nodes/:node/${suffix}`;
    router.get(path, onlyQuery(...listParams, ...(detail ? [] : ['fields', 'detail'])), async (req, res) => {
      if (req.context.minor < options.sinceMinor) throw new ResourceNotFound();
      const node = await deps.nodes.find(req.params.node as string, req.context.minor);
      await listResources(spec, req, res, {
        deps,
        detail,
        resource: `nodes/${node.uuid}/${suffix}`,
        scope: { nodeId: node.id },
      });
    });
    allow(path, ['GET']);
  }
  return router;
}
