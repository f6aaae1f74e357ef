#!/usr/bin/env node
import {
  applyGcSettings,
  ConfigError,
  configFilesFromArgs,
  createMetricsRegistry,
  createRootLogger,
  survivePipeLoss,
} from '@bmaas/common';
import { createStores, openDatabase, resolveDatabaseUrl, serviceDatabaseOptions } from '@bmaas/db';
import { createConductor } from './conductor.js';
import { prepareConductor } from './conductor-setup.js';
import { conductorIdentity } from './identity.js';
import { ConductorMetrics } from './metrics/conductor-metrics.js';
import { loadConductorConfig } from './registry/plugin-config.js';

/** `bmaas-conductor [--config-file PATH]...`: runs one conductor until SIGTERM or SIGINT. */
async function main(argv: string[]): Promise<void> {
  // The core options and every plug-in's own section ([pxe], …), checked alike.
  const config = loadConductorConfig({ configFiles: configFilesFromArgs(argv) });
  // Pretenuring off; young collections on the main thread alone when [DEFAULT]parallel_young_gc is off.
  applyGcSettings(config.DEFAULT);
  const { hostname } = conductorIdentity(config);
  const logger = createRootLogger({
    level: config.DEFAULT.log_level,
    format: config.DEFAULT.log_format,
    defaultMeta: { service: 'conductor', conductor: hostname },
  });
  // Orphaned by a launcher killed outright, it keeps running until the next start stops it.
  survivePipeLoss();
  // One registry for the process, filled by the recorders it is handed to and served at /metrics.
  const metrics = new ConductorMetrics(createMetricsRegistry());
  // Refuse a bad configuration before touching the database.
  const setup = prepareConductor({ config, logger, agentCommands: metrics, powerActions: metrics });
  const database = await resolveDatabaseUrl(config, logger.child({ component: 'database' }));
  const db = openDatabase({
    connection: database.url,
    ...serviceDatabaseOptions(config.database),
    applicationName: 'bmaas-conductor',
    onQuery: () => metrics.databaseQuery(),
    logger: logger.child({ component: 'database' }),
  });
  const conductor = createConductor({ config, stores: createStores(db), logger, setup, metrics });

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn('second signal: exiting at once', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('stopping', { signal });
    conductor
      .stop()
      .then(async () => {
        await db.destroy();
        await database.embedded?.stop();
      })
      .then(
        () => process.exit(0),
        (error: Error) => {
          logger.error('unclean stop', { error: error.message, stack: error.stack });
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  await conductor.start();
}

main(process.argv.slice(2)).catch((error: Error) => {
  process.stderr.write(
    `${error instanceof ConfigError ? 'config error: ' : 'conductor failed to start: '}${error.message}\n`,
  );
  process.exit(1);
});
