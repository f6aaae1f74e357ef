import type { Knex } from 'knex';

/** What we use of a pg client taken from knex's pool. */
interface PgConnection {
  query(config: { name?: string | undefined; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
}

/** PostgreSQL's "cached plan must not change result type": the table changed under a prepared `select *`. */
const FEATURE_NOT_SUPPORTED = '0A000';

/**
 * Runs a named statement (prepared once per pooled connection, then only
 * bound and executed) on a connection from knex's own pool, past knex's
 * query builder. For the boot path's reads, which run once or twice per
 * firmware request: measured on two cores, knex's builder and runner cost
 * about as much CPU as the query itself, and re-planning costs PostgreSQL
 * more than executing a prepared plan. `text` uses $1, $2…; one name, one text
 * (no name: an unnamed statement, planned each time).
 */
export async function queryPrepared<Row>(
  db: Knex,
  name: string | undefined,
  text: string,
  values: readonly unknown[],
): Promise<Row[]> {
  // A transaction's client hands out the transaction's own connection, so this stays inside it.
  const connection = (await db.client.acquireConnection()) as PgConnection;
  try {
    return (await connection.query({ name, text, values })).rows as Row[];
  } catch (error) {
    // A migration added a column while we run: answer from a fresh plan (the statement heals when the connection goes).
    if ((error as { code?: string }).code !== FEATURE_NOT_SUPPORTED) throw error;
    return (await connection.query({ text, values })).rows as Row[];
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Names for the statements of one kind (inserts, updates), by text: one
 * name per text, a bounded number of them (column lists are a handful per
 * table); past the bound a text runs unnamed, planned each time.
 */
class StatementNames {
  private readonly names = new Map<string, string>();

  constructor(
    private readonly prefix: string,
    private readonly max = 256,
  ) {}

  of(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = `${this.prefix}_${this.names.size + 1}`;
      this.names.set(text, name);
    }
    return name;
  }
}

const insertNames = new StatementNames('bmaas_insert');
const updateNames = new StatementNames('bmaas_update');

/**
 * `insert into <table> (<columns of row>) values ($1, …)`, then `tail`
 * (`returning *`, or more around it through `wrap`), as a named statement per
 * table and column list: enrolment inserts thousands of nodes and ports with
 * the same columns, and knex's builder cost about as much CPU as the insert.
 * `row` holds column values as knex would bind them (recordToColumns).
 */
export async function insertPrepared<Row>(
  db: Knex,
  table: string,
  row: Record<string, unknown>,
  wrap: (insert: string) => string = (insert) => `${insert} returning *`,
): Promise<Row[]> {
  const columns = Object.keys(row);
  const placeholders = columns.map((_, index) => `$${index + 1}`);
  const text = wrap(
    `insert into "${table}" (${columns.map((column) => `"${column}"`).join(', ')}) values (${placeholders.join(', ')})`,
  );
  return queryPrepared<Row>(db, insertNames.of(text), text, Object.values(row));
}

/**
 * `update <table> set <columns of set> = $1, …[, <extra set SQL>] where <columns of where> = $n …
 * returning *` (or `returning` as given) as a named statement per table and column lists: the conductor
 * writes a node several times per provisioning action (state, step, power,
 * its lock), always with one of a handful of column lists. `set` and `where`
 * hold column values as knex would bind them (recordToColumns); a null in
 * `where` means `is null`, as with knex's where({ column: null }).
 * `setSql` is appended to the SET list as written (e.g. `"updated_at" = now()`).
 */
export async function updatePrepared<Row>(
  db: Knex,
  table: string,
  set: Record<string, unknown>,
  where: Record<string, unknown>,
  options: { setSql?: string; returning?: string } = {},
): Promise<Row[]> {
  const values: unknown[] = [];
  const assignments = Object.entries(set).map(([column, value]) => {
    values.push(value);
    return `"${column}" = $${values.length}`;
  });
  if (options.setSql) assignments.push(options.setSql);
  const conditions = Object.entries(where).map(([column, value]) => {
    if (value === null) return `"${column}" is null`;
    values.push(value);
    return `"${column}" = $${values.length}`;
  });
  const text = `update "${table}" set ${assignments.join(', ')} where ${conditions.join(' and ')} returning ${
    options.returning ?? '*'
  }`;
  return queryPrepared<Row>(db, updateNames.of(text), text, values);
}
