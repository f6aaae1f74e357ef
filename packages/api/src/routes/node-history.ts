import { InvalidParameterValue, type NodeHistoryRecord, ResourceNotFound } from '@bmaas/common';
import type { Request, Response, Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { buildUrl, selfAndBookmark } from '../links.js';
import { nextQuery, onlyQuery, optionalBoolean, PAGE_PARAMS, parsePage, queryString } from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { isUuid } from '../validation.js';
import { Minor } from '../versions.js';
import { timestamp } from '../views/format.js';

/**
 * An entry as Ironic shows it: the list's short form truncates long events
 * to 255 characters; the detail adds project from 1.113 and where the node
 * was (state, target, time in the state left) from 1.115.
 */
function historyView(entry: NodeHistoryRecord, nodeUuid: string, baseUrl: string, detail: boolean, minor: number) {
  const view: Record<string, unknown> = {
    uuid: entry.uuid,
    created_at: timestamp(entry.createdAt),
    severity: entry.severity,
    event: detail || entry.event.length <= 255 ? entry.event : `${entry.event.slice(0, 251)}...`,
  };
  if (detail) Object.assign(view, { event_type: entry.eventType, conductor: entry.conductor, user: entry.user });
  if (detail && minor >= Minor.HISTORY_PROJECT) view.project = entry.project;
  if (detail && minor >= Minor.HISTORY_STATE_FIELDS) {
    Object.assign(view, {
      state: entry.state,
      target_provision_state: entry.targetProvisionState,
      duration_seconds: entry.durationSeconds,
    });
  }
  view.links = selfAndBookmark(baseUrl, 'nodes', `${nodeUuid}/history/${entry.uuid}`).slice(0, 1);
  return view;
}

/** /v1/nodes/{id}/history (1.78): provision state changes, errors and served boot configurations. */
export function nodeHistoryRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const node = async (req: Request) => {
    requireResourceMinor(req.context.minor, Minor.NODE_HISTORY);
    return deps.nodes.find(req.params.ident as string, req.context.minor);
  };

  const list = async (req: Request, res: Response, detailPath: boolean) => {
    const target = await node(req);
    const query = queryOf(req);
    const detail = detailPath || (optionalBoolean(query, 'detail') ?? false);
    const page = parsePage(query, deps.config.api.max_limit, 'created_at');
    if (page.sortKey !== 'created_at') {
      throw new InvalidParameterValue(`The sort_key value ${page.sortKey} is an invalid field for sorting`);
    }
    if (page.marker !== undefined) {
      if (!isUuid(page.marker)) throw new InvalidParameterValue(`Expected UUID for marker: ${page.marker}`);
      if (!(await deps.stores.nodeHistory.exists(page.marker))) {
        throw new ResourceNotFound(`Node history record ${page.marker} could not be found.`);
      }
    }
    const entries = await deps.stores.nodeHistory.list(target.id, page);
    const baseUrl = baseUrlOf(req, deps);
    const body: Record<string, unknown> = {
      history: entries.map((entry) => historyView(entry, target.uuid, baseUrl, detail, req.context.minor)),
    };
    const last = entries[entries.length - 1];
    if (last && entries.length === page.limit) {
      const params = { sort_key: page.sortKey, sort_dir: page.sortDir, detail: queryString(query, 'detail') };
      const path = `nodes/${req.params.ident}/history${detailPath ? '/detail' : ''}`;
      body.next = buildUrl(baseUrl, path, nextQuery(params, page.limit, last.uuid));
    }
    res.json(body);
  };
  router.get('/v1/nodes/:ident/history', onlyQuery(...PAGE_PARAMS, 'detail'), (req, res) => list(req, res, false));
  // What ironicclient asks for `node history list --long`.
  router.get('/v1/nodes/:ident/history/detail', onlyQuery(...PAGE_PARAMS), (req, res) => list(req, res, true));

  router.get('/v1/nodes/:ident/history/:event', onlyQuery(), async (req, res) => {
    const target = await node(req);
    const uuid = req.params.event as string;
    const entry = isUuid(uuid) ? await deps.stores.nodeHistory.get(target.id, uuid.toLowerCase()) : undefined;
    if (!entry) throw new ResourceNotFound(`Node history record ${uuid} could not be found.`);
    res.json(historyView(entry, target.uuid, baseUrlOf(req, deps), true, req.context.minor));
  });

  allow('/v1/nodes/:ident/history', ['GET']);
  allow('/v1/nodes/:ident/history/:event', ['GET']);
  return router;
}
