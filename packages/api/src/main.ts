#!/usr/bin/env node
import { createServer } from 'node:http';
import {
  applyGcSettings,
  configFilesFromArgs,
  createMetricsRegistry,
  createRootLogger,
  isBmaasError,
  jsonRpcAuthStrategy,
  loadConfig,
  survivePipeLoss,
} from '@bmaas/common';
import { createStores, followBootPath, openDatabase, serviceDatabaseOptions } from '@bmaas/db';
import { ConductorRing, JsonRpcConductorClient, RpcCallMetrics } from '@bmaas/rpc-client';
import { createApiListener } from './app.js';
import { BootLookupIndex } from './boot/boot-lookup-index.js';
import { ApiMetrics } from './metrics/api-metrics.js';

/** The API process: config, logger, database, conductor client, then listen until SIGTERM/SIGINT. */
async function main(argv: readonly string[]): Promise<void> {
  // The API loads no plug-in: their sections ([pxe], …) are the conductors' to check.
  const config = loadConfig({ configFiles: configFilesFromArgs(argv), pluginSections: 'ignore' });
  // Pretenuring off; young collections on the main thread alone when [DEFAULT]parallel_young_gc is off.
  applyGcSettings(config.DEFAULT);
  const logger = createRootLogger({
    level: config.DEFAULT.log_level,
    format: config.DEFAULT.log_format,
    defaultMeta: { service: 'api' },
  });
  // Orphaned by a launcher killed outright, it keeps running until the next start stops it.
  survivePipeLoss();
  const connection = config.database.connection;
  if (!connection) {
    process.stderr.write(
      'bmaas-api: [database]connection is not set; the API does not start a database itself (set BMAAS_DATABASE__CONNECTION or use the stack launcher)\n',
    );
    process.exit(1);
  }
  if (
    jsonRpcAuthStrategy(config) === 'http_basic' &&
    (config.json_rpc.username === null || config.json_rpc.password === null)
  ) {
    logger.warn(
      'JSON-RPC authentication is http_basic but [json_rpc]username or password is unset: conductors will refuse this API (401)',
      { component: 'api' },
    );
  }
  const db = openDatabase({
    connection,
    ...serviceDatabaseOptions(config.database),
    applicationName: 'bmaas-api',
    logger: logger.child({ component: 'database' }),
  });
  const stores = createStores(db);
  const bootPath = followBootPath(
    stores.bootPathChanges,
    config.database,
    logger.child({ component: 'boot-path-cache' }),
    (following) => new BootLookupIndex(stores.ports, following),
  );
  bootPath?.feed.start();
  const ring = new ConductorRing({
    conductors: stores.conductors,
    heartbeatTimeout: config.conductor.heartbeat_timeout,
    resetInterval: config.DEFAULT.hash_ring_reset_interval,
    logger,
  });
  // One registry for the process, filled by the recorders it is handed to and served at /metrics.
  const registry = createMetricsRegistry();
  const conductors = new JsonRpcConductorClient({
    ring,
    config: config.json_rpc,
    logger,
    metrics: new RpcCallMetrics(registry, 'client'),
  });
  const metrics = new ApiMetrics(registry);
  const server = createServer(
    createApiListener({ config, logger, db, conductors, metrics, bootLookupIndex: bootPath?.listener }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.api.port, config.api.host_ip, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.api.port;
  logger.info(`API listening on http://${config.api.host_ip}:${port}`, { component: 'api', port });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal} received, stopping`, { component: 'api' });
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await conductors.close();
    await bootPath?.feed.stop();
    await db.destroy();
    logger.info('API stopped', { component: 'api' });
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = isBmaasError(error)
    ? error.message
    : error instanceof Error
      ? (error.stack ?? error.message)
      : String(error);
  process.stderr.write(`bmaas-api: ${message}\n`);
  process.exit(1);
});
