import { InvalidParameterValue } from '@bmaas/common';
import { Ajv, type AnySchema, type ErrorObject } from 'ajv';

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BOOLEAN_WORDS = /^(1|t|true|on|y|yes|0|f|false|off|n|no)$/i;

/** Compiled schemas are pure functions of the request body; one Ajv serves them all. */
const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
ajv.addFormat('uuid', UUID_PATTERN);
ajv.addFormat('boolean-word', BOOLEAN_WORDS);

/** JSON Schema pieces shared by the resources' schemas. */
export const schemaTypes = {
  uuid: { type: 'string', format: 'uuid' },
  nullableUuid: { anyOf: [{ type: 'null' }, { type: 'string', format: 'uuid' }] },
  /** A boolean, or one of Ironic's boolean words as a string. */
  booleanLike: { anyOf: [{ type: 'boolean' }, { type: 'string', format: 'boolean-word' }] },
  nullableBooleanLike: { anyOf: [{ type: 'null' }, { type: 'boolean' }, { type: 'string', format: 'boolean-word' }] },
  nullableString: (maxLength: number) => ({ type: ['string', 'null'], maxLength }),
  nullableObject: { type: ['object', 'null'] },
} as const;

/** RFC 6902 documents as Ironic accepts them: add, replace and remove on a path below the root. */
export const PATCH_SCHEMA = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    properties: {
      op: { type: 'string', enum: ['add', 'replace', 'remove'] },
      path: { type: 'string', pattern: '^/[^/]' },
      value: {},
    },
    required: ['op', 'path'],
    additionalProperties: false,
    anyOf: [
      { type: 'object', properties: { op: { const: 'remove' } } },
      { type: 'object', properties: { value: {} }, required: ['value'] },
    ],
  },
} as const;

/** A checker that throws InvalidParameterValue naming the first problem, as Ironic's schema errors do. */
export function compileSchema<T>(name: string, schema: AnySchema): (value: unknown) => T {
  const validate = ajv.compile(schema);
  return (value: unknown): T => {
    if (!validate(value)) {
      const errors = validate.errors ?? [];
      const badUuid = errors.find((e) => e.keyword === 'format' && e.params.format === 'uuid');
      // Ironic checks UUIDs after its schema, with its own words: clients match them.
      if (badUuid) throw new InvalidParameterValue(`Expected UUID for ${fieldOf(badUuid)}: ${valueAt(value, badUuid)}`);
      throw new InvalidParameterValue(`Schema error for ${name}: ${describe(mostTelling(errors))}`);
    }
    return value as T;
  };
}

/** Missing or unexpected properties say most; then the failed alternative as a whole; then whatever came first. */
function mostTelling(errors: readonly ErrorObject[]): ErrorObject | undefined {
  return (
    errors.find((e) => e.keyword === 'required' || e.keyword === 'additionalProperties') ??
    errors.find((e) => e.keyword === 'anyOf') ??
    errors[0]
  );
}

function fieldOf(error: ErrorObject): string {
  return error.instancePath.replace(/^\//, '').replace(/\//g, '.');
}

function valueAt(document: unknown, error: ErrorObject): unknown {
  let value = document;
  for (const key of error.instancePath.split('/').slice(1)) value = (value as Record<string, unknown>)?.[key];
  return value;
}

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'invalid value';
  const field = fieldOf(error);
  switch (error.keyword) {
    case 'additionalProperties':
      return `Additional properties are not allowed ('${error.params.additionalProperty}' was unexpected)`;
    case 'required':
      return `'${error.params.missingProperty}' is a required property${field ? ` of ${field}` : ''}`;
    case 'anyOf':
      return `${field || 'value'} has an invalid type or format`;
    default:
      return `${field || 'value'} ${error.message ?? 'is invalid'}`;
  }
}

/** Ironic's boolean words to a boolean (after schema validation). */
export function toBoolean(value: boolean | string): boolean {
  if (typeof value === 'boolean') return value;
  return /^(1|t|true|on|y|yes)$/i.test(value);
}

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
