import type { Knex } from 'knex';
import { recordToColumns, rowToRecord } from './case.js';
import { queryPrepared } from './prepared-query.js';

/** PostgreSQL binds at most 65,535 parameters per statement. */
const MAX_PARAMETERS = 65_535;

/**
 * Inserts `rows` (column values as recordToColumns gives them) with
 * multi-row `insert … values (…), (…) returning *` statements: as many rows
 * per statement as PostgreSQL's parameter limit allows. A column a row leaves
 * out gets the column's default (`default` in its place). `wrap` puts SQL
 * around each insert (the default adds `returning *`). Run it inside a
 * transaction when the rows must go in all together: a second statement may
 * fail after the first went in. Rows come back in no particular order.
 */
export async function insertMany<Row>(
  db: Knex,
  table: string,
  rows: ReadonlyArray<Record<string, unknown>>,
  wrap: (insert: string) => string = (insert) => `${insert} returning *`,
): Promise<Row[]> {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  if (rows.length === 0 || columns.length === 0) return [];
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  const inserted: Row[] = [];
  for (let start = 0; start < rows.length; start += perStatement) {
    const values: unknown[] = [];
    const tuples = rows.slice(start, start + perStatement).map((row) => {
      const cells = columns.map((column) => {
        if (!(column in row)) return 'default';
        values.push(row[column]);
        return `$${values.length}`;
      });
      return `(${cells.join(', ')})`;
    });
    const insert = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
    inserted.push(...(await queryPrepared<Row>(db, undefined, wrap(insert), values)));
  }
  return inserted;
}

/**
 * A store's createMany: `records` inserted with insertMany (their
 * `jsonColumns` as JSON), answered as records in the order given (matched by
 * uuid). A conflict is `translate(error, the offending record)` (an empty one
 * when the error names none), with that record's index in the error's
 * details (`index`).
 */
export async function insertRecords<New extends { uuid: string }, Stored>(
  db: Knex,
  table: string,
  records: readonly New[],
  options: {
    jsonColumns: ReadonlySet<string>;
    translate: (error: unknown, record: Partial<New>) => unknown;
    wrap?: (insert: string) => string;
  },
): Promise<Stored[]> {
  const rows = records.map((record) => recordToColumns({ ...record }, options.jsonColumns));
  let inserted: Array<Record<string, unknown>>;
  try {
    inserted = await insertMany<Record<string, unknown>>(db, table, rows, options.wrap);
  } catch (error) {
    const index = violatingRow(error, rows);
    throw withDetails(options.translate(error, index === undefined ? {} : (records[index] ?? {})), { index });
  }
  const byUuid = new Map(inserted.map((row) => [row.uuid as string, rowToRecord<Stored>(row)]));
  return records.map((record) => byUuid.get(record.uuid) as Stored);
}

/**
 * The index in `rows` of the row a PostgreSQL unique or foreign-key
 * violation of a multi-row insert is about, read from the error's detail
 * (`Key (address)=(52:54:00:00:00:01) already exists.`): of rows holding
 * that value, the second when there are several (it met the first in the
 * same statement), otherwise the one. Undefined when the detail names no
 * single column or no row holds the value.
 */
export function violatingRow(error: unknown, rows: ReadonlyArray<Record<string, unknown>>): number | undefined {
  const detail = (error as { detail?: unknown })?.detail;
  if (typeof detail !== 'string') return undefined;
  const match = /^Key \(([a-z_]+)\)=\((.*)\) (?:already exists|is not present in table)/s.exec(detail);
  if (!match) return undefined;
  const [, column, value] = match as unknown as [string, string, string];
  const holders: number[] = [];
  rows.forEach((row, index) => {
    if (row[column] !== undefined && row[column] !== null && String(row[column]) === value) holders.push(index);
  });
  return holders.length > 1 ? holders[1] : holders[0];
}

/** Adds facts (those not undefined) to a domain error's details; anything else is returned as it is. */
export function withDetails(error: unknown, facts: Record<string, number | undefined>): unknown {
  const details = (error as { details?: unknown })?.details;
  if (error instanceof Error && details !== null && typeof details === 'object') {
    for (const [key, value] of Object.entries(facts)) if (value !== undefined) Object.assign(details, { [key]: value });
  }
  return error;
}

/** A number a domain error's details hold under `key`. */
export function detailOf(error: unknown, key: string): number | undefined {
  const value = (error as { details?: Record<string, unknown> })?.details?.[key];
  return typeof value === 'number' ? value : undefined;
}
