import { ConductorNotFound, type ConductorRecord, InvalidParameterValue, ResourceNotFound } from '@bmaas/common';
import type { Request, Router } from 'express';
import { buildUrl } from '../links.js';
import { nextQuery, onlyQuery, PAGE_PARAMS, parsePage, queryString, requestedFields } from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { Minor } from '../versions.js';
import { CONDUCTOR_DEFAULT_FIELDS, checkConductorFields, conductorView } from '../views/conductor-view.js';

type Conductor = ConductorRecord & { alive: boolean };

const SORT_KEYS: Readonly<Record<string, (c: Conductor) => string | number>> = {
  id: (c) => c.id,
  hostname: (c) => c.hostname,
  conductor_group: (c) => c.conductorGroup,
  created_at: (c) => c.createdAt.getTime(),
  updated_at: (c) => c.updatedAt?.getTime() ?? 0,
};

/** The conductor endpoints appeared in 1.49; older requests see nothing there. */
function requireConductorsVersion(req: Request): void {
  if (req.context.minor < Minor.CONDUCTORS) throw new ResourceNotFound('The resource could not be found.');
}

/** One page of conductors: the table is small, so it is sorted and cut here. */
function pageOf(all: Conductor[], page: ReturnType<typeof parsePage>): Conductor[] {
  const key = Object.hasOwn(SORT_KEYS, page.sortKey) ? SORT_KEYS[page.sortKey] : undefined;
  if (!key) throw new InvalidParameterValue(`The sort_key value ${page.sortKey} is an invalid field for sorting`);
  const direction = page.sortDir === 'asc' ? 1 : -1;
  const sorted = [...all].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return (x < y ? -1 : x > y ? 1 : a.id - b.id) * direction;
  });
  let start = 0;
  if (page.marker !== undefined) {
    const index = sorted.findIndex((c) => c.hostname === page.marker);
    if (index < 0) throw new ConductorNotFound(page.marker);
    start = index + 1;
  }
  return sorted.slice(start, start + page.limit);
}

/** /v1/conductors: the registered conductors and whether each is alive. */
export function conductorsRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const heartbeatTimeout = deps.config.conductor.heartbeat_timeout;

  router.get('/v1/conductors', onlyQuery(...PAGE_PARAMS, 'fields', 'detail'), async (req, res) => {
    requireConductorsVersion(req);
    const query = queryOf(req);
    const fields = requestedFields(query, req.context.minor, CONDUCTOR_DEFAULT_FIELDS);
    if (queryString(query, 'fields') !== undefined) checkConductorFields(fields);
    const page = parsePage(query, deps.config.api.max_limit);
    const conductors = pageOf(await deps.stores.conductors.list(heartbeatTimeout), page);
    const baseUrl = baseUrlOf(req, deps);
    const body: Record<string, unknown> = { conductors: conductors.map((c) => conductorView(c, baseUrl, fields)) };
    const last = conductors[conductors.length - 1];
    if (last && conductors.length === page.limit) {
      const params = {
        sort_key: page.sortKey,
        sort_dir: page.sortDir,
        detail: queryString(query, 'detail'),
        fields: queryString(query, 'fields'),
      };
      body.next = buildUrl(baseUrl, 'conductors', nextQuery(params, page.limit, last.hostname));
    }
    res.json(body);
  });

  router.get('/v1/conductors/:hostname', onlyQuery('fields'), async (req, res) => {
    requireConductorsVersion(req);
    const query = queryOf(req);
    const fields =
      queryString(query, 'fields') !== undefined ? requestedFields(query, req.context.minor, undefined) : undefined;
    checkConductorFields(fields);
    const conductor = await deps.stores.conductors.get(req.params.hostname as string, heartbeatTimeout);
    if (!conductor) throw new ConductorNotFound(req.params.hostname as string);
    res.json(conductorView(conductor, baseUrlOf(req, deps), fields));
  });

  allow('/v1/conductors', ['GET']);
  allow('/v1/conductors/:hostname', ['GET']);
  return router;
}
