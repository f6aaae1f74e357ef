import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Request, RequestHandler, Router } from 'express';
import { resourceRouter } from '../route-deps.js';
import type { RecentBootRequests } from './recent-boot-requests.js';

/** The page's files, read once at start: packages/api/static/dashboard (as far from src/ as from dist/). */
const STATIC_DIR = new URL('../../static/dashboard/', import.meta.url);

const ASSETS: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'fleet.js': 'text/javascript; charset=utf-8',
  'fleet.css': 'text/css; charset=utf-8',
};

export interface DashboardDeps {
  recentBoots: RecentBootRequests;
  /** The API's authentication for paths it keeps public (`/`); undefined with noauth. */
  authenticate: RequestHandler | undefined;
  /** When this API process started (epoch ms). */
  startedAt: number;
}

/** A browser asking for `/`: it prefers HTML to JSON (a JSON client, or no Accept, gets the versions document). */
function prefersHtml(req: Request): boolean {
  return req.accepts(['application/json', 'text/html']) === 'text/html';
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
  const files = new Map(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, STATIC_DIR)) }]),
  );
  const serve =
    (name: string): RequestHandler =>
    (_req, res) => {
      const file = files.get(name) as { type: string; body: Buffer };
      res.setHeader('Cache-Control', 'no-cache');
      res.type(file.type).send(file.body);
    };
  // `/` stays the versions document for JSON clients; only a browser's request goes on here.
  const htmlOnly: RequestHandler = (req, res, next) => {
    res.vary('Accept');
    next(prefersHtml(req) ? undefined : 'route');
  };

  router.get('/', htmlOnly, ...(deps.authenticate ? [deps.authenticate] : []), serve('index.html'));
  router.get('/dashboard', serve('index.html'));
  for (const name of ['fleet.js', 'fleet.css']) router.get(`/dashboard/${name}`, serve(name));
  router.get('/dashboard/boot-requests', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json(bootRequestsJson(deps));
  });

  for (const path of ['/dashboard', '/dashboard/fleet.js', '/dashboard/fleet.css', '/dashboard/boot-requests']) {
    allow(path, ['GET']);
  }
  return router;
}
