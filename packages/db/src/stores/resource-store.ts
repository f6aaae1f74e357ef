import type { Knex } from 'knex';
import { recordToColumns, rowToRecord } from './case.js';
import { applyKeysetPage } from './keyset-page.js';
import { isUniqueViolation } from './pg-errors.js';

/** What a table of one resource kind looks like to the generic store. */
export interface ResourceTableSpec {
  table: string;
  /** jsonb columns (written as JSON text). */
  jsonColumns: readonly string[];
  /** API sort keys -> NOT NULL SQL expressions. */
  sortExpressions: Readonly<Record<string, string>>;
  /** The resource's node: `nodes.uuid` is read as `node_uuid` (left join on node_id). */
  hasNode: boolean;
  /** Whether the table has a unique `name` column. */
  hasName: boolean;
  /** The domain error for a unique violation on `constraint`, given the values written. */
  conflict(constraint: string, values: Record<string, unknown>): Error;
}

export interface PageQuery {
  limit: number;
  marker?: string;
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

/**
 * Filters, by camelCase column name: a value is equality, a list is `in`.
 * `node.<column>` names a column of the resource's node (hasNode).
 */
export type ColumnFilters = Record<string, string | number | boolean | null | readonly string[]>;

/**
 * SQL for the tables of the resources around nodes (chassis, portgroups,
 * allocations, templates, runbooks, volume connectors and targets): one
 * implementation of create, read, list with keyset pages, update and delete.
 * Records are camelCase; a node-owned record carries `nodeUuid`.
 */
export class ResourceStore<R extends { id: number; uuid: string }> {
  private readonly jsonColumns: ReadonlySet<string>;

  constructor(
    protected readonly db: Knex,
    protected readonly spec: ResourceTableSpec,
  ) {
    this.jsonColumns = new Set(spec.jsonColumns);
  }

  protected select(db: Knex | Knex.Transaction = this.db): Knex.QueryBuilder {
    const { table } = this.spec;
    const q = db(table).select(`${table}.*`);
    if (this.spec.hasNode) q.leftJoin('nodes', 'nodes.id', `${table}.node_id`).select('nodes.uuid as node_uuid');
    return q;
  }

  async create(values: Record<string, unknown>, db: Knex | Knex.Transaction = this.db): Promise<R> {
    try {
      const [row] = await db(this.spec.table).insert(recordToColumns(values, this.jsonColumns)).returning('id');
      return (await this.getById((row as { id: number }).id, db)) as R;
    } catch (error) {
      throw this.translate(error, values);
    }
  }

  async getById(id: number, db: Knex | Knex.Transaction = this.db): Promise<R | undefined> {
    const row = await this.select(db).where(`${this.spec.table}.id`, id).first();
    return row ? rowToRecord<R>(row) : undefined;
  }

  async getByUuid(uuid: string): Promise<R | undefined> {
    const row = await this.select().where(`${this.spec.table}.uuid`, uuid.toLowerCase()).first();
    return row ? rowToRecord<R>(row) : undefined;
  }

  async getByName(name: string): Promise<R | undefined> {
    if (!this.spec.hasName) return undefined;
    const row = await this.select().where(`${this.spec.table}.name`, name).first();
    return row ? rowToRecord<R>(row) : undefined;
  }

  /** One page of records matching every filter (camelCase column -> value). */
  async list(filters: ColumnFilters, page: PageQuery): Promise<R[]> {
    const { table } = this.spec;
    const q = this.select();
    for (const [column, value] of Object.entries(filters)) {
      const [owner, field] = column.startsWith('node.') ? ['nodes', column.slice(5)] : [table, column];
      const name = `${owner}.${field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
      if (value === null) q.whereNull(name);
      else if (Array.isArray(value)) q.whereIn(name, value);
      else q.where(name, value as string | number | boolean);
    }
    applyKeysetPage(q, table, this.spec.sortExpressions, page);
    return (await q).map((row: Record<string, unknown>) => rowToRecord<R>(row));
  }

  async count(filters: ColumnFilters): Promise<number> {
    const row = await this.db(this.spec.table)
      .where(recordToColumns(filters, this.jsonColumns))
      .count<{ count: string }[]>('* as count')
      .first();
    return Number(row?.count ?? 0);
  }

  async update(
    id: number,
    changes: Record<string, unknown>,
    db: Knex | Knex.Transaction = this.db,
  ): Promise<R | undefined> {
    try {
      const count = await db(this.spec.table)
        .where({ id })
        .update(Object.assign(recordToColumns(changes, this.jsonColumns), { updated_at: this.db.fn.now() }));
      return count ? this.getById(id, db) : undefined;
    } catch (error) {
      throw this.translate(error, changes);
    }
  }

  async destroy(id: number): Promise<boolean> {
    return (await this.db(this.spec.table).where({ id }).delete()) > 0;
  }

  private translate(error: unknown, values: Record<string, unknown>): unknown {
    const constraint = isUniqueViolation(error);
    return constraint ? this.spec.conflict(constraint, values) : error;
  }
}

/** Sort keys every resource has. */
export const COMMON_SORT_EXPRESSIONS = (table: string): Record<string, string> => ({
  id: `${table}.id`,
  uuid: `${table}.uuid`,
  created_at: `${table}.created_at`,
  updated_at: `coalesce(${table}.updated_at, '-infinity')`,
});
