import knex, { type Knex } from 'knex';
import pg from 'pg';

// Return timestamps as Date and bigint counts as numbers: our tables use int ids.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number.parseInt(value, 10));

export type Database = Knex;

export interface DatabaseOptions {
  connection: string;
  maxPoolSize?: number;
  /** application_name shown in pg_stat_activity, e.g. "bmaas-api". */
  applicationName?: string;
}

/** A knex instance over a pg pool. The caller owns it and must destroy() it. */
export function openDatabase(options: DatabaseOptions): Database {
  return knex({
    client: 'pg',
    connection: { connectionString: options.connection, application_name: options.applicationName ?? 'bmaas' },
    pool: { min: 0, max: options.maxPoolSize ?? 10 },
    acquireConnectionTimeout: 10_000,
  });
}
