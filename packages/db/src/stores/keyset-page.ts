import { InvalidParameterValue } from '@bmaas/common';
import type { Knex } from 'knex';

/**
 * Keyset pagination: rows after the one whose uuid is `marker`, ordered by the
 * sort expression then id. `sortExpressions` maps each allowed sort key to a
 * NOT NULL SQL expression (nullable columns are wrapped in COALESCE) so the
 * row comparison never meets NULL.
 */
export function applyKeysetPage(
  q: Knex.QueryBuilder,
  table: string,
  sortExpressions: Readonly<Record<string, string>>,
  page: { limit: number; marker?: string; sortKey: string; sortDir: 'asc' | 'desc' },
): void {
  // Own keys only: "constructor" or "toString" must not find Object.prototype's functions.
  const expression = Object.hasOwn(sortExpressions, page.sortKey) ? sortExpressions[page.sortKey] : undefined;
  if (typeof expression !== 'string') {
    throw new InvalidParameterValue(`The sort_key value ${page.sortKey} is an invalid field for sorting`);
  }
  const op = page.sortDir === 'asc' ? '>' : '<';
  if (page.marker !== undefined) {
    q.whereRaw(`(${expression}, ${table}.id) ${op} (select ${expression}, ${table}.id from ${table} where uuid = ?)`, [
      page.marker,
    ]);
  }
  q.orderByRaw(`${expression} ${page.sortDir}, ${table}.id ${page.sortDir}`).limit(page.limit);
}
