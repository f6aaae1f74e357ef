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
  /**
   * Longest a statement may run ([database]statement_timeout): the server
   * cancels it, and the client gives up a second later when the server itself
   * does not answer (a frozen or unreachable server), dropping that
   * connection. Unset = no bound (migrations).
   */
  statementTimeoutMs?: number;
  /** Longest a query waits for a pooled connection, or for a new one to open ([database]pool_timeout). */
  poolTimeoutMs?: number;
}

/** What pg says when the client-side bound (query_timeout) of a statement passes. */
const CLIENT_TIMEOUT_MESSAGE = 'Query read timeout';
/** Extra time the client gives the server's own statement_timeout before it gives up itself. */
const CLIENT_TIMEOUT_GRACE_MS = 1000;

type QueryCallback = (error: Error | null, result?: unknown) => void;
interface PooledClient extends pg.Client {
  /** Set on a connection knex must destroy rather than reuse (knex's own marker). */
  __knex__disposed?: unknown;
}

/**
 * A connection whose statement hit the client-side timeout still has that
 * statement on the wire: it is marked for knex to destroy and closed, so the
 * pool opens a fresh one instead of queueing behind a server that may never answer.
 */
function dropConnectionsOnClientTimeout(connection: PooledClient): void {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (error: Error | null, result?: unknown) => {
        if (error?.message === CLIENT_TIMEOUT_MESSAGE) {
          connection.__knex__disposed = error;
          connection.end().catch(() => {});
        }
        (callback as QueryCallback)(error, result);
      };
    }
    return query(...args);
  };
}

/** A knex instance over a pg pool. The caller owns it and must destroy() it. */
export function openDatabase(options: DatabaseOptions): Database {
  const statementTimeout = options.statementTimeoutMs;
  const poolTimeout = options.poolTimeoutMs ?? 10_000;
  return knex({
    client: 'pg',
    connection: {
      connectionString: options.connection,
      application_name: options.applicationName ?? 'bmaas',
      connectionTimeoutMillis: poolTimeout,
      keepAlive: true,
      ...(statementTimeout
        ? { statement_timeout: statementTimeout, query_timeout: statementTimeout + CLIENT_TIMEOUT_GRACE_MS }
        : {}),
    },
    pool: {
      min: 0,
      max: options.maxPoolSize ?? 10,
      afterCreate: (connection: PooledClient, done: (error: Error | null, connection: PooledClient) => void) => {
        if (statementTimeout) dropConnectionsOnClientTimeout(connection);
        done(null, connection);
      },
    },
    acquireConnectionTimeout: poolTimeout,
  });
}

/** The pool bounds of a service process, from [database]. */
export function serviceDatabaseOptions(database: {
  max_pool_size: number;
  statement_timeout: number;
  pool_timeout: number;
}): Pick<DatabaseOptions, 'maxPoolSize' | 'statementTimeoutMs' | 'poolTimeoutMs'> {
  return {
    maxPoolSize: database.max_pool_size,
    statementTimeoutMs: database.statement_timeout * 1000,
    poolTimeoutMs: database.pool_timeout * 1000,
  };
}

/**
 * True for errors that say the database is out of reach or too slow right
 * now (a timeout, a refused or dropped connection, a cancelled statement),
 * not that the request was wrong: callers answer 503 and may retry.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { name?: string; code?: string; message?: string } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.name === 'KnexTimeoutError') return true;
  // 57014 query_canceled (statement_timeout), 57P01-57P03 shutdown/cannot connect now, class 08 connection errors.
  if (typeof e.code === 'string' && (/^57(014|P0[123])$/.test(e.code) || /^08/.test(e.code))) return true;
  if (typeof e.code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(e.code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly/i.test(
    message,
  );
}
