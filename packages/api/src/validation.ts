import { InvalidParameterValue, pythonRepr } from '@bmaas/common';
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
      const error = mostTelling(errors);
      // Ironic's words first; the field they are about after them (Ironic leaves it out).
      const field = error ? fieldOf(error) : '';
      const where = field ? ` (field ${field})` : '';
      field && error?.keyword !== 'additionalProperties' && error?.keyword !== 'required' ? ` (field ${field})` : '';
      throw new InvalidParameterValue(`Schema error for ${name}: ${describe(error, value)}${where}`);
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
  for (const token of error.instancePath.split('/').slice(1)) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    value = (value as Record<string, unknown>)?.[key];
  }
  return value;
}

/**
 * The one place an Ajv error becomes words: those of the jsonschema library
 * Ironic validates with (the value as Python writes it), so a client that
 * matches Ironic's refusals matches ours.
 */
function describe(error: ErrorObject | undefined, document: unknown): string {
  if (!error) return 'invalid value';
  const value = pythonRepr(valueAt(document, error));
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return `Additional properties are not allowed (${pythonRepr(params.additionalProperty)} was unexpected)`;
    case 'required':
      return `${pythonRepr(params.missingProperty)} is a required property`;
    case 'anyOf':
    case 'oneOf':
      return `${value} is not valid under any of the given schemas`;
    case 'type': {
      const types = Array.isArray(params.type) ? params.type : String(params.type).split(',');
      return `${value} is not of type ${types.map(pythonRepr).join(', ')}`;
    }
    case 'maxLength':
    case 'maxItems':
      return params.limit === 0 ? `${value} is expected to be empty` : `${value} is too long`;
    case 'minLength':
    case 'minItems':
      return params.limit === 1 ? `${value} should be non-empty` : `${value} is too short`;
    case 'maxProperties':
      return `${value} has too many properties`;
    case 'minProperties':
      return params.limit === 1 ? `${value} should be non-empty` : `${value} does not have enough properties`;
    case 'pattern':
      return `${value} does not match ${pythonRepr(params.pattern)}`;
    case 'enum':
      return `${value} is not one of ${pythonRepr(params.allowedValues)}`;
    case 'const':
      return `${pythonRepr(params.allowedValue)} was expected`;
    case 'minimum':
      return `${value} is less than the minimum of ${params.limit}`;
    case 'maximum':
      return `${value} is greater than the maximum of ${params.limit}`;
    case 'exclusiveMinimum':
      return `${value} is less than or equal to the minimum of ${params.limit}`;
    case 'exclusiveMaximum':
      return `${value} is greater than or equal to the maximum of ${params.limit}`;
    case 'uniqueItems':
      return `${value} has non-unique elements`;
    case 'format':
      return `${value} is not a ${pythonRepr(params.format)}`;
    default:
      return `${value} is not valid: ${error.message ?? 'invalid value'}`;
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
