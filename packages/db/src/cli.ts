#!/usr/bin/env node
import { ConfigError, configFileArgs, createRootLogger, loadConfig } from '@bmaas/common';
import { openDatabase } from './connection.js';
import { downgradeSchema, schemaVersion, upgradeSchema } from './migrations/index.js';
import { resolveDatabaseUrl } from './resolve.js';

const USAGE = 'usage: bmaas-dbsync [--config-file PATH]... upgrade|downgrade|version';

/** `bmaas-dbsync upgrade`: the explicit migration command (ironic-dbsync's counterpart). */
async function main(argv: string[]): Promise<number> {
  const { configFiles, positionals } = configFileArgs(argv);
  const command = positionals[0];
  if (!command || !['upgrade', 'downgrade', 'version'].includes(command)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  // This process loads no plug-in: their sections ([pxe], …) are the conductors' to check.
  const config = loadConfig({ configFiles, pluginSections: 'ignore' });
  const logger = createRootLogger({ level: config.DEFAULT.log_level, format: config.DEFAULT.log_format }).child({
    component: 'dbsync',
  });
  const database = await resolveDatabaseUrl(config, logger);
  const db = openDatabase({ connection: database.url, applicationName: 'bmaas-dbsync', logger });
  try {
    if (command === 'upgrade') {
      const applied = await upgradeSchema(db);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema is up to date\n');
    } else if (command === 'downgrade') {
      const reverted = await downgradeSchema(db);
      process.stdout.write(`reverted: ${reverted.join(', ') || 'nothing'}\n`);
    }
    process.stdout.write(`schema version: ${(await schemaVersion(db)) ?? 'none'}\n`);
    return 0;
  } finally {
    await db.destroy();
    await database.embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${error instanceof ConfigError ? 'config error: ' : ''}${error.message ?? error}\n`);
    process.exit(1);
  },
);
