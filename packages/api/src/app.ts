import type { RequestListener } from 'node:http';
import { type BmaasConfig, HtpasswdUsers, type Logger } from '@bmaas/common';
import { createStores } from '@bmaas/db';
import type { ConductorClient } from '@bmaas/rpc-client';
import express, { type Express, type Router } from 'express';
import type { Knex } from 'knex';
import { agentRouter } from './agent/agent-router.js';
import { BootConfigController } from './boot/boot-config-controller.js';
import { bootConfigTarget, createBootConfigHandler } from './boot/boot-config-router.js';
import type { BootLookupIndex } from './boot/boot-lookup-index.js';
import { dashboardRouter } from './dashboard/dashboard-router.js';
import { RecentBootRequests } from './dashboard/recent-boot-requests.js';
import type { ApiMetrics } from './metrics/api-metrics.js';
import { registerNodeCountGauge } from './metrics/node-count-gauge.js';
import { httpBasicAuth, requireBasicAuth } from './middleware/auth.js';
import { errorHandler, notFound } from './middleware/errors.js';
import { jsonBody } from './middleware/json-body.js';
import { requestContext } from './middleware/request-id.js';
import { recordRequestDurations } from './middleware/request-metrics.js';
import { enteredByPrefix } from './middleware/route-prefixes.js';
import { refuseNulInUrl } from './middleware/url-guard.js';
import { negotiateVersion } from './middleware/version.js';
import { NodeService } from './node-service.js';
import { PortService } from './port-service.js';
import { resourceRouters } from './resources/index.js';
import type { RouteDeps } from './route-deps.js';
import { conductorsRouter } from './routes/conductors.js';
import { driversRouter } from './routes/drivers.js';
import { eventsRouter } from './routes/events.js';
import { metricsRouter } from './routes/metrics.js';
import { nodeHardwareRouter } from './routes/node-hardware.js';
import { nodeHistoryRouter } from './routes/node-history.js';
import { nodeInventoryRouter } from './routes/node-inventory.js';
import { nodeManagementRouter } from './routes/node-management.js';
import { nodeStatesRouter } from './routes/node-states.js';
import { nodeTraitsRouter } from './routes/node-traits.js';
import { nodeVmediaRouter } from './routes/node-vmedia.js';
import { nodesRouter } from './routes/nodes.js';
import { BULK_ENROLMENT_PATH, nodesBulkRouter } from './routes/nodes-bulk.js';
import { portsRouter } from './routes/ports.js';
import { rootRouter } from './routes/root.js';
import { shardsRouter } from './routes/shards.js';

export interface ApiDeps {
  config: BmaasConfig;
  logger: Logger;
  db: Knex;
  conductors: ConductorClient;
  /** The recorder of this API process; its registry is served at /metrics. */
  metrics: ApiMetrics;
  /** The MAC index following the change log, when [database]boot_path_cache is on (main starts it). */
  bootLookupIndex?: Pick<BootLookupIndex, 'get'> | undefined;
}

/** Firmware and ramdisk endpoints: not versioned (they cannot negotiate) and public. */
export const UNVERSIONED_PREFIXES = ['/v1/boot', '/v1/lookup', '/v1/heartbeat', '/v1/continue_inspection'];

/**
 * The API as a node:http request listener (main and the tests listen with
 * it). `/v1/boot` — firmware's bare GET: public, unversioned, refusals one
 * uniform 404 — goes straight to its handler: in a boot storm it is nearly
 * every request, and express's routing would cost more CPU than the rest of
 * it (docs/performance.md). Everything else goes to the express app.
 * It registers the node count gauge in the registry of `deps.metrics`: one
 * listener per registry.
 */
export function createApiListener(deps: ApiDeps): RequestListener {
  const stores = createStores(deps.db);
  const bootConfig = new BootConfigController({
    ports: stores.ports,
    index: deps.bootLookupIndex,
    conductors: deps.conductors,
    restrictToWaitStates: deps.config.api.restrict_boot_config,
    rpcTimeoutMs: deps.config.api.boot_config_rpc_timeout * 1000,
    discovery: deps.config.discovery.enabled ? { driver: deps.config.discovery.driver } : undefined,
  });
  // This process's boot log for the fleet page and the metrics: the boot handler's observers.
  const recentBoots = new RecentBootRequests();
  const boot = createBootConfigHandler(bootConfig, deps.logger.child({ component: 'boot-config' }), [
    recentBoots,
    deps.metrics,
  ]);
  registerNodeCountGauge(deps.metrics.registry, stores.nodeCounts, deps.logger.child({ component: 'metrics' }));
  const app = createApp(deps, recentBoots);
  return (req, res) => {
    const bootTarget = bootConfigTarget(req.url ?? '');
    if (bootTarget === undefined) {
      app(req, res);
      return;
    }
    req.url = bootTarget;
    void boot(req, res);
  };
}

/**
 * The REST API but `/v1/boot` as an express app (createApiListener puts both
 * together); the fleet page shows `recentBoots`, what the boot handler observed.
 */
export function createApp(deps: ApiDeps, recentBoots: RecentBootRequests): Express {
  const logger = deps.logger.child({ component: 'api' });
  const stores = createStores(deps.db);
  const routeDeps: RouteDeps = {
    config: deps.config,
    stores,
    conductors: deps.conductors,
    nodes: new NodeService({ config: deps.config, stores, conductors: deps.conductors }),
    ports: new PortService(stores),
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  app.use(requestContext(logger));
  app.use(recordRequestDurations(deps.metrics));
  app.use(refuseNulInUrl);
  app.use(negotiateVersion(UNVERSIONED_PREFIXES));
  const users =
    deps.config.DEFAULT.auth_strategy === 'http_basic'
      ? HtpasswdUsers.fromFile(deps.config.DEFAULT.http_basic_auth_user_file)
      : undefined;
  if (users) app.use(httpBasicAuth(users));
  app.use(jsonBody({ largeBodyPaths: [BULK_ENROLMENT_PATH] }));
  // Every router is mounted at / and entered only by requests under its routes' prefixes.
  const routers: Router[] = [
    dashboardRouter({
      recentBoots,
      authenticate: users ? requireBasicAuth(users) : undefined,
      startedAt: Date.now(),
    }),
    metricsRouter(deps.metrics.registry),
    rootRouter(routeDeps),
    nodesBulkRouter(routeDeps),
    nodesRouter(routeDeps),
    nodeStatesRouter(routeDeps),
    nodeManagementRouter(routeDeps),
    nodeVmediaRouter(routeDeps),
    nodeTraitsRouter(routeDeps),
    nodeHistoryRouter(routeDeps),
    nodeHardwareRouter(routeDeps),
    shardsRouter(routeDeps),
    eventsRouter(routeDeps),
    nodeInventoryRouter(routeDeps),
    portsRouter(routeDeps),
    conductorsRouter(routeDeps),
    driversRouter(routeDeps),
    agentRouter(routeDeps),
    ...resourceRouters(routeDeps),
  ];
  for (const router of routers) app.use(enteredByPrefix(router));
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
