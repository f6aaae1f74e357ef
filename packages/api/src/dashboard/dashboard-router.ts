import { hostname } from 'node:os';
import type { RequestHandler, Router } from 'express';
import { resourceRouter } from '../route-deps.js';
import type { RecentBootRequests } from './recent-boot-requests.js';

export interface DashboardDeps {
  recentBoots: RecentBootRequests;
  /** The API's authentication for paths it keeps public (`/`); undefined with noauth. */
  authenticate: RequestHandler | undefined;
  /** When this API process started (epoch ms). */
  startedAt: number;
}

/** The page and its boot log as JSON, from one API process. */
function bootRequestsJson(deps: DashboardDeps): Record<string, unknown> {
  return {
    api_process: { hostname: hostname(), pid: process.pid, started_at: new Date(deps.startedAt).toISOString() },
    capacity: deps.recentBoots.capacity,
    total: deps.recentBoots.total,
    served: deps.recentBoots.served,
    boot_requests: deps.recentBoots.recent().map(({ at, event }) => ({
      time: new Date(at).toISOString(),
      outcome: event.outcome,
      name: event.name ?? null,
      mac: event.mac ?? null,
      node_uuid: event.nodeUuid ?? null,
      duration_ms: Math.round(event.durationSeconds * 1e5) / 100,
    })),
  };
}

/**
 * The fleet page, outside Ironic's versioned routes: `GET /dashboard` (and
 * `GET /` from a browser) serves a static page that polls the REST API and
 * `GET /dashboard/boot-requests`, this process's last answered boot
 * requests. Everything here is authenticated like the REST API; `/` is
 * public for version discovery, so its HTML answer authenticates itself.
 */
export function dashboardRouter(deps: DashboardDeps): Router {
  const { router, allow } = resourceRouter();
  router.get('/dashboard/boot-requests', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json(bootRequestsJson(deps));
  });

  allow('/dashboard/boot-requests', ['GET']);
  return router;
}
