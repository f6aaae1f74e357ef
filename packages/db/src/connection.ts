import type { Logger } from '@bmaas/common';
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
  /** Called for every statement sent (knex's and prepared ones alike): what a process's metrics count. */
  onQuery?: () => void;
  /**
   * Where knex's own warnings go (a failed acquire, a deprecation): the process's log lines,
   * not knex's default of plain text on standard output. Unset: knex's default.
   */
  logger?: Logger;
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
 * The servers of a connection string, libpq style: `postgresql://user@h1:5432,h2:5432/db
 * ?target_session_attrs=read-write`. node-postgres connects to one host only, so the choice
 * is made here: each host in turn, the first that answers and (read-write) is not read-only.
 * Undefined for a one-host string without target_session_attrs (handed to pg as it is).
 */
export function parseMultiHost(connection: string): { urls: string[]; readWrite: boolean } | undefined {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?]*@)?([^/?]*)(.*)$/.exec(connection);
  if (!match) return undefined;
  const [, scheme, userinfo = '', hostList = '', rest = ''] = match;
  let attrs: string | undefined;
  const tail = rest.replace(/([?&])target_session_attrs=([^&]*)&?/, (_, sep: string, value: string) => {
    attrs = value;
    return sep;
  });
  const cleanTail = tail.replace(/[?&]$/, '');
  const hosts = hostList.split(',').filter(Boolean);
  if (hosts.length <= 1 && attrs === undefined) return undefined;
  if (attrs !== undefined && attrs !== 'read-write' && attrs !== 'any') {
    throw new Error(`target_session_attrs=${attrs}: only read-write and any are supported`);
  }
  return { urls: hosts.map((host) => `${scheme}${userinfo}${host}${cleanTail}`), readWrite: attrs === 'read-write' };
}

/** SQLSTATE of "no server could be used" (libpq's own words for the same case). */
const UNABLE_TO_CONNECT = '08001';

/** The first of `urls` that answers and, for read-write, is not read-only (SHOW transaction_read_only, as libpq). */
async function chooseServer(urls: readonly string[], readWrite: boolean, timeoutMs: number): Promise<string> {
  const refused: string[] = [];
  // A host that is down (no answer at all) may take its whole timeout: share the bound among
  // the hosts and the connection that follows, so the pool's own timeout still finds the next one.
  const perHostMs = Math.max(300, Math.floor(timeoutMs / (urls.length + 1)));
  for (const url of urls) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: perHostMs });
    let connected = false;
    try {
      await client.connect();
      connected = true;
      if (!readWrite) return url;
      const answer = await client.query('show transaction_read_only');
      if (answer.rows[0]?.transaction_read_only === 'off') return url;
      refused.push(`${new URL(url).host}: read-only`);
    } catch (error) {
      refused.push(`${new URL(url).host}: ${(error as Error).message}`);
    } finally {
      // end() of a client whose connect failed never settles.
      if (connected) await client.end().catch(() => {});
    }
  }
  throw Object.assign(
    new Error(`no ${readWrite ? 'writable ' : ''}database server among ${urls.length} (${refused.join('; ')})`),
    { code: UNABLE_TO_CONNECT },
  );
}

/**
 * A connection whose statement hit the client-side timeout (or found its server read-only) still has that
 * statement on the wire: it is marked for knex to destroy and closed, so the
 * pool opens a fresh one instead of queueing behind a server that may never answer.
 */
function dropConnectionsOnClientTimeout(
  connection: PooledClient,
  onLost?: (error: Error) => void,
  onQuery?: () => void,
): void {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    onQuery?.();
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (error: Error | null, result?: unknown) => {
        // 25006: the server became read-only under us (a primary demoted): find the writable one again.
        if (error?.message === CLIENT_TIMEOUT_MESSAGE || (error as { code?: string } | null)?.code === '25006') {
          connection.__knex__disposed = error;
          connection.end().catch(() => {});
        }
        if (error && isDatabaseUnavailable(error)) onLost?.(error);
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
  const multiHost = parseMultiHost(options.connection);
  const settings = {
    application_name: options.applicationName ?? 'bmaas',
    connectionTimeoutMillis: poolTimeout,
    keepAlive: true,
    ...(statementTimeout
      ? { statement_timeout: statementTimeout, query_timeout: statementTimeout + CLIENT_TIMEOUT_GRACE_MS }
      : {}),
  };
  // Several hosts: the server chosen stays until a statement finds the database gone or
  // read-only, or a new connection fails; then knex asks again (its expirationChecker) and
  // drops the pooled connections at their next use: after a failover every process finds
  // the new primary by itself.
  const choice = { stale: true };
  const db = knex({
    client: 'pg',
    connection: multiHost
      ? async () => {
          const connectionString = await chooseServer(multiHost.urls, multiHost.readWrite, poolTimeout);
          choice.stale = false;
          return { connectionString, ...settings, expirationChecker: () => choice.stale };
        }
      : { connectionString: options.connection, ...settings },
    pool: {
      min: 0,
      max: options.maxPoolSize ?? 10,
      afterCreate: (connection: PooledClient, done: (error: Error | null, connection: PooledClient) => void) => {
        dropConnectionsOnClientTimeout(
          connection,
          () => {
            choice.stale = true;
          },
          options.onQuery,
        );
        done(null, connection);
      },
    },
    acquireConnectionTimeout: poolTimeout,
    ...(options.logger ? { log: knexLog(options.logger) } : {}),
  });
  if (multiHost) {
    (db.client as { pool?: { on(event: string, listener: () => void): void } }).pool?.on('createFail', () => {
      choice.stale = true;
    });
  }
  return db;
}

/** knex's log sink as lines of `logger` (knex hands each function one message, a string or an object). */
function knexLog(logger: Logger) {
  const text = (message: unknown) => (typeof message === 'string' ? message : JSON.stringify(message));
  return {
    warn: (message: unknown) => logger.warn(text(message)),
    error: (message: unknown) => logger.error(text(message)),
    deprecate: (message: unknown) => logger.warn(text(message)),
    debug: (message: unknown) => logger.debug(text(message)),
  };
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
  // 57014 query_canceled (statement_timeout), 57P01-57P03 shutdown/cannot connect now, class 08 connection
  // errors, 25006 read-only transaction (the server was demoted: a failover under way).
  if (typeof e.code === 'string' && (/^57(014|P0[123])$/.test(e.code) || /^08/.test(e.code) || e.code === '25006'))
    return true;
  if (typeof e.code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(e.code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly/i.test(
    message,
  );
}
