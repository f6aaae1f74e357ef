import { secondsSince } from '@bmaas/common';
import type { RequestHandler } from 'express';
import type { ApiMetrics } from '../metrics/api-metrics.js';

/**
 * Records how long each REST request took once its answer is sent, labelled
 * with the route template express matched (`/v1/nodes/:node_ident`), never
 * the raw path; a request no route matched (404, or refused before routing,
 * e.g. 401) counts as `unmatched`.
 */
export function recordRequestDurations(metrics: ApiMetrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => {
      const path: unknown = req.route?.path;
      const route = path === undefined ? 'unmatched' : `${req.baseUrl}${String(path)}`;
      metrics.observeRestRequest(req.method, route, res.statusCode, secondsSince(started));
    });
    next();
  };
}
