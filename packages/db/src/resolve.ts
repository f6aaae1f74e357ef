import { join, resolve } from 'node:path';
import type { BmaasConfig, Logger } from '@bmaas/common';
import { EmbeddedPostgresServer } from './embedded-postgres.js';

export interface ResolvedDatabase {
  url: string;
  /** Set when this process started an embedded server it must stop. */
  embedded?: EmbeddedPostgresServer;
}

/**
 * The database a stack uses: [database]connection when set, else an embedded
 * PostgreSQL under [DEFAULT]state_path (started here, database `bmaas`).
 */
export async function resolveDatabaseUrl(config: BmaasConfig, logger: Logger): Promise<ResolvedDatabase> {
  if (config.database.connection) return { url: config.database.connection };
  const embedded = new EmbeddedPostgresServer({
    dataDir: join(resolve(config.DEFAULT.state_path), 'pgdata'),
    port: config.database.embedded_port,
    logger,
  });
  await embedded.start();
  return { url: await embedded.ensureDatabase('bmaas'), embedded };
}
