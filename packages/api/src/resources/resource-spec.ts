import { InvalidParameterValue, ResourceNotFound } from '@bmaas/common';
import type { ColumnFilters, ResourceStore } from '@bmaas/db';
import { versionTooLow } from '../errors.js';
import { applyJsonPatch, parsePatch } from '../json-patch.js';
import { selfAndBookmark } from '../links.js';
import { isValidLogicalName } from '../node-names.js';
import type { RouteDeps } from '../route-deps.js';
import { isUuid } from '../validation.js';
import { Minor } from '../versions.js';
import { pickFields, timestamp } from '../views/format.js';

/** What every stored resource has; the router answers these fields itself. */
export interface StoredResource {
  id: number;
  uuid: string;
  createdAt: Date;
  updatedAt: Date | null;
}

/** What a resource's rules see of the request. */
export interface ResourceContext {
  deps: RouteDeps;
  minor: number;
  baseUrl: string;
  /** Travels with the conductor calls a resource makes (create_allocation). */
  requestId?: string;
}

/**
 * One REST resource around nodes (chassis, portgroups, allocations, …): its
 * path, microversions, fields and rules. The generic router
 * (resource-router.ts) serves every resource from its spec.
 */
export interface ResourceSpec<R extends StoredResource> {
  /** Path under /v1 (`portgroups`, `volume/connectors`). */
  path: string;
  /** Key of the list in collection answers (`portgroups`, `connectors`). */
  listKey: string;
  /** Version that added the resource; below it every path answers 404, as Ironic. */
  sinceMinor: number;
  /** Every field of the answer (links aside) with the version that added it. */
  fields: Readonly<Record<string, number>>;
  /** Fields of a list without ?fields= or detail. */
  defaultFields: readonly string[] | undefined;
  /** Lists take `?detail=` from this version (Ironic: 1.43, volume lists since they came, 1.32). */
  detailQuerySince?: number;
  /** Query filters of the list with the version that added each. */
  filters: Readonly<Record<string, number>>;
  store: ResourceStore<R>;
  /** Whether a resource may be addressed by name as well as by UUID. */
  byName: boolean;
  notFound(ident: string): Error;
  /** Column filters for the list's query parameters (only known ones given). */
  listFilters(query: Readonly<Record<string, string>>, ctx: ResourceContext): Promise<ColumnFilters>;
  /**
   * The fields of a record as Ironic answers them, but created_at, updated_at
   * and links, which the router adds (versions and ?fields= applied by it too).
   */
  view(record: R, ctx: ResourceContext): Record<string, unknown>;
  create(body: unknown, ctx: ResourceContext): Promise<R>;
  patch(record: R, body: unknown, ctx: ResourceContext): Promise<R>;
  remove(record: R, ctx: ResourceContext): Promise<void>;
}

/** A custom trait (what deploy template and runbook names and allocation traits are): `CUSTOM_` and upper-case. */
export const CUSTOM_TRAIT = { type: 'string', minLength: 1, maxLength: 255, pattern: '^CUSTOM_[A-Z0-9_]+$' } as const;

/** A name a resource may have: RFC 3986 unreserved characters, at most 255, not a UUID (Ironic's logical names). */
export function isResourceName(name: string): boolean {
  return isValidLogicalName(name, Minor.UNRESTRICTED_NODE_NAME) && !isUuid(name);
}

/** A resource by UUID (or by name when the resource has names); 400 for a malformed identifier. */
export async function findResource<R extends StoredResource>(spec: ResourceSpec<R>, ident: string): Promise<R> {
  let record: R | undefined;
  if (isUuid(ident)) record = await spec.store.getByUuid(ident);
  else if (!spec.byName) throw new InvalidParameterValue(`Expected UUID for uuid: ${ident}`);
  else if (!isResourceName(ident)) {
    throw new InvalidParameterValue(`Expected a logical name or UUID but received ${ident}.`);
  } else record = await spec.store.getByName(ident);
  if (!record) throw spec.notFound(ident);
  return record;
}

/** Throws Ironic's plain 404 when the request's version predates the resource. */
export function checkResourceVersion(spec: { sinceMinor: number }, minor: number): void {
  if (minor < spec.sinceMinor) throw new ResourceNotFound();
}

/** `?fields=` names must be fields of the resource and of the request's version. */
export function checkFields(
  spec: { fields: Readonly<Record<string, number>> },
  fields: readonly string[],
  minor: number,
) {
  const unknown = fields.filter((f) => spec.fields[f] === undefined);
  if (unknown.length > 0) throw new InvalidParameterValue(`Field(s) "${unknown.join(', ')}" are not valid`);
  for (const field of fields) {
    const since = spec.fields[field] ?? 0;
    if (minor < since) throw versionTooLow(since);
  }
}

/** The answer for one record: fields of the request's version, then ?fields=. */
export function renderResource<R extends StoredResource>(
  spec: ResourceSpec<R>,
  record: R,
  ctx: ResourceContext,
  fields?: readonly string[],
): Record<string, unknown> {
  const full = {
    ...spec.view(record, ctx),
    created_at: timestamp(record.createdAt),
    updated_at: timestamp(record.updatedAt),
    links: selfAndBookmark(ctx.baseUrl, spec.path, record.uuid),
  };
  const view = pickFields(full, fields);
  for (const field of Object.keys(view)) {
    if (ctx.minor < (spec.fields[field] ?? 0)) delete view[field];
  }
  return view;
}

/**
 * Applies an RFC 6902 patch to the writable document of a record and checks
 * the result with the create schema: the rules of a patched resource are
 * those of a new one. Fields newer than the request's version are refused.
 */
export function patchedDocument<T>(options: {
  document: Record<string, unknown>;
  body: unknown;
  defaults: Readonly<Record<string, unknown>>;
  check: (value: unknown) => T;
  writeVersions?: Readonly<Record<string, number>>;
  minor: number;
}): T {
  const allowed = Object.keys(options.document).sort();
  const ops = parsePatch(options.body, allowed, options.minor);
  for (const op of ops) {
    const since = options.writeVersions?.[op.path.split('/')[1] ?? ''];
    if (since !== undefined && options.minor < since) throw versionTooLow(since);
  }
  return options.check(applyJsonPatch(options.document, ops, options.defaults));
}

/**
 * Saves what a patch changed: the columns of `next` that differ from the
 * record (JSON compared by value); `beforeSave` may refuse the changes.
 * Unchanged, the record is answered as it is.
 */
export async function saveChanges<R extends StoredResource>(
  store: ResourceStore<R>,
  record: R,
  next: Record<string, unknown>,
  beforeSave?: (changes: Record<string, unknown>) => Promise<void>,
): Promise<R> {
  const changes = changedColumns(record, next);
  if (Object.keys(changes).length === 0) return record;
  await beforeSave?.(changes);
  return (await store.update(record.id, changes)) ?? record;
}

/** The changed columns between a record and its patched values (JSON compared by value). */
export function changedColumns(record: object, next: Record<string, unknown>): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(next)) {
    const current = (record as Record<string, unknown>)[key];
    if (JSON.stringify(current ?? null) !== JSON.stringify(value ?? null)) changes[key] = value;
  }
  return changes;
}

/** Refuses fields of a create body that are newer than the request's version. */
export function checkWriteVersions(
  body: Record<string, unknown>,
  writeVersions: Readonly<Record<string, number>>,
  minor: number,
): void {
  for (const [field, since] of Object.entries(writeVersions)) {
    if (body[field] != null && minor < since) throw versionTooLow(since);
  }
}
