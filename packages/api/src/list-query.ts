import { InvalidParameterValue } from '@bmaas/common';
import type { RequestHandler } from 'express';
import { requireMinor } from './errors.js';
import { Minor } from './versions.js';

/** One query parameter as a single string (repeated parameters: the last wins). */
export function queryString(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) return queryString({ [name]: value[value.length - 1] }, name);
  return typeof value === 'string' ? value : undefined;
}

const TRUE = new Set(['1', 't', 'true', 'on', 'y', 'yes']);
const FALSE = new Set(['0', 'f', 'false', 'off', 'n', 'no']);

/** Ironic's strict boolean words (True, yes, 1, off, …). */
export function parseBoolean(name: string, value: string): boolean {
  const lower = value.trim().toLowerCase();
  if (TRUE.has(lower)) return true;
  if (FALSE.has(lower)) return false;
  throw new InvalidParameterValue(
    `Invalid ${name}: Unrecognized value '${value}', acceptable values are: '${[...FALSE, ...TRUE].join("', '")}'`,
  );
}

export function optionalBoolean(query: Record<string, unknown>, name: string): boolean | undefined {
  const value = queryString(query, name);
  return value === undefined ? undefined : parseBoolean(name, value);
}

export interface PageQuery {
  limit: number;
  marker?: string;
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

/** limit, marker, sort_key and sort_dir as Ironic checks them; the marker's own format is checked by the caller. */
export function parsePage(query: Record<string, unknown>, maxLimit: number, defaultSortKey = 'id'): PageQuery {
  const rawLimit = queryString(query, 'limit');
  let limit = maxLimit;
  if (rawLimit !== undefined) {
    if (!/^[+-]?\d+$/.test(rawLimit.trim())) {
      throw new InvalidParameterValue(`Expected an integer for limit: ${rawLimit}`);
    }
    const requested = Number(rawLimit);
    if (requested <= 0) throw new InvalidParameterValue('Limit must be positive');
    limit = Math.min(requested, maxLimit);
  }
  const sortDir = queryString(query, 'sort_dir') ?? 'asc';
  if (sortDir !== 'asc' && sortDir !== 'desc') {
    throw new InvalidParameterValue(`Invalid sort direction: ${sortDir}. Acceptable values are 'asc' or 'desc'`);
  }
  const page: PageQuery = { limit, sortKey: queryString(query, 'sort_key') ?? defaultSortKey, sortDir };
  const marker = queryString(query, 'marker');
  if (marker !== undefined && marker !== '') page.marker = marker;
  return page;
}

/**
 * The fields a list answers with: `?fields=` (1.8+), all of them with
 * `?detail=true` (1.43+), else the resource's defaults. Undefined = every field.
 */
export function requestedFields(
  query: Record<string, unknown>,
  minor: number,
  defaults: readonly string[] | undefined,
): string[] | undefined {
  const fields = parseFieldsParam(query, minor);
  const rawDetail = queryString(query, 'detail');
  let detail: boolean | undefined;
  if (rawDetail !== undefined) {
    if (minor < Minor.DETAIL_QUERY)
      throw new InvalidParameterValue(`Invalid query parameter ?detail=${rawDetail} received.`);
    detail = parseBoolean('detail', rawDetail);
  }
  if (fields !== undefined && detail) {
    throw new InvalidParameterValue('Can not specify ?detail=True and fields in the same request.');
  }
  if (fields === undefined && !detail) return defaults ? [...defaults] : undefined;
  return fields;
}

/** `?fields=a,b` (1.8+), or undefined. */
export function parseFieldsParam(query: Record<string, unknown>, minor: number): string[] | undefined {
  const raw = queryString(query, 'fields');
  if (raw === undefined) return undefined;
  requireMinor(minor, Minor.FIELDS_SUBSET);
  return raw
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
}

/** The `next` link's query: the caller's parameters, then limit and the marker. */
export function nextQuery(params: Record<string, string | undefined>, limit: number, marker: string): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.append(key, value);
  search.append('limit', String(limit));
  search.append('marker', marker);
  return `?${search.toString()}`;
}

/**
 * Refuses query parameters a route does not know (Ironic's "Unknown
 * argument"), so a filter we do not implement is never silently ignored.
 */
export function onlyQuery(...allowed: string[]): RequestHandler {
  const known = new Set(allowed);
  return (req, _res, next) => {
    const unknown = Object.keys(req.query ?? {}).find((name) => !known.has(name));
    if (unknown !== undefined) throw new InvalidParameterValue(`Unknown argument: "${unknown}"`);
    next();
  };
}

export const PAGE_PARAMS = ['limit', 'marker', 'sort_key', 'sort_dir'] as const;

/** The names of a comma-separated filter (`?shard=a,b`), trimmed, empty ones dropped. */
export function commaList(value: string): string[] {
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}
