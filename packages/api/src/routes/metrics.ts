import type { Router } from 'express';
import type { Registry } from 'prom-client';
import { resourceRouter } from '../route-deps.js';

/**
 * `GET /metrics`: the process's metrics in the Prometheus text format. It
 * sits behind the same authentication as the REST API ([DEFAULT]auth_strategy).
 */
export function metricsRouter(registry: Registry): Router {
  const { router, allow } = resourceRouter();
  router.get('/metrics', async (_req, res) => {
    const text = await registry.metrics();
    res.setHeader('Content-Type', registry.contentType);
    res.send(text);
  });
  allow('/metrics', ['GET']);
  return router;
}
