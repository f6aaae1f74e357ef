import { InvalidParameterValue, pythonRepr } from '@bmaas/common';
import jsonPatch, { type Operation } from 'fast-json-patch';
import { compileSchema, PATCH_SCHEMA } from './validation.js';
import { Minor } from './versions.js';

export interface PatchOperation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

const checkPatchDocument = compileSchema<PatchOperation[]>('patch', PATCH_SCHEMA);

/** The top-level field an operation touches (`/driver_info/ipmi_address` -> `driver_info`). */
export function rootField(path: string): string {
  return decodePointer(path.split('/')[1] ?? '');
}

function decodePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/**
 * Validates an RFC 6902 body and that it only touches `allowed` top-level
 * fields. Ironic reads `~0` and `~1` in the field name as `~` and `/` from
 * 1.98 on; older requests name the field as written.
 */
export function parsePatch(body: unknown, allowed: readonly string[], minor: number): PatchOperation[] {
  const ops = checkPatchDocument(body);
  for (const op of ops) {
    const field = minor >= Minor.PATCH_ESCAPED_KEYS ? rootField(op.path) : (op.path.split('/')[1] ?? '');
    if (!allowed.includes(field)) {
      throw new InvalidParameterValue(
        `Cannot patch ${op.path}. Only the following can be updated: ${allowed.join(', ')}`,
      );
    }
  }
  return ops;
}

/** The values a patch writes to `path` (Ironic's get_patch_values). */
export function patchValues(ops: readonly PatchOperation[], path: string): unknown[] {
  return ops.filter((op) => op.path === path && op.op !== 'remove').map((op) => op.value);
}

export function touches(ops: readonly PatchOperation[], field: string): boolean {
  return ops.some((op) => rootField(op.path) === field);
}

/**
 * Applies the operations to a copy of `doc`. A removed top-level field comes
 * back as its default (`defaults`), as Ironic resets removed attributes.
 */
export function applyJsonPatch(
  doc: Record<string, unknown>,
  ops: readonly PatchOperation[],
  defaults: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  let result: Record<string, unknown>;
  try {
    result = jsonPatch.applyPatch(structuredClone(doc), ops as Operation[], true, true, true).newDocument;
  } catch (error) {
    throw new InvalidParameterValue(`Couldn't apply patch '${pythonRepr(ops)}'. Reason: ${patchFailure(error)}`);
  }
  for (const [field, value] of Object.entries(defaults)) {
    if (!(field in result)) result[field] = structuredClone(value);
  }
  return result;
}

/** Why fast-json-patch refused an operation, in the words of Python's jsonpatch (which Ironic's messages carry). */
function patchFailure(error: unknown): string {
  const failed = error as { name?: string; operation?: PatchOperation; message?: string };
  const key = failed.operation ? decodePointer(failed.operation.path.split('/').pop() ?? '') : '';
  if (failed.name === 'OPERATION_PATH_UNRESOLVABLE' && failed.operation) {
    return `can't ${failed.operation.op} a non-existent object '${key}'`;
  }
  return (failed.message ?? String(error)).split('\n')[0] ?? 'invalid patch';
}
