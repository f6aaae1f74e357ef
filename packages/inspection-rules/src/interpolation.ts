import { pythonRepr } from '@bmaas/common';

/**
 * Ironic's rule arguments are Python format strings over `node`,
 * `inventory`, `plugin_data` (and `item` in a loop): `{inventory[cpu][count]}`,
 * `{node.driver_info[ipmi_address]}`. A field is a name followed by
 * `.attribute` and `[key]` parts; the result is a string, values shown as
 * Python's str() shows them, as in Ironic.
 */
export type FormatContext = Readonly<Record<string, unknown>>;

const FIELD = /\{([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]]*\])*)\}/g;
const PART = /\.([A-Za-z_][A-Za-z0-9_]*)|\[([^\]]*)\]/g;

/** A missing field: Ironic leaves the string as written, except for `is-empty`, which sees None. */
export class MissingField extends Error {}

function lookup(context: FormatContext, name: string, parts: string): unknown {
  if (!Object.hasOwn(context, name)) throw new MissingField(name);
  let value = context[name];
  for (const match of parts.matchAll(PART)) {
    const key = match[1] ?? (match[2] as string);
    // Python's format: [digits] indexes by number, anything else by string key.
    const index = match[2] !== undefined && /^\d+$/.test(key) ? Number(key) : key;
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, index)) throw new MissingField(key);
    value = (value as Record<string | number, unknown>)[index];
  }
  return value;
}

/** A value as Python's str() shows it. */
export function pythonStr(value: unknown): string {
  if (typeof value === 'string') return value;
  return pythonRepr(value);
}

/** `text` with its fields replaced; throws MissingField for a field the context lacks. */
export function formatString(text: string, context: FormatContext): string {
  return text.replace(FIELD, (_whole, name: string, parts: string) => pythonStr(lookup(context, name, parts)));
}

/**
 * Formats every string in `value` (keys of objects too), as Ironic's
 * interpolate_variables. A missing field leaves its string as written, or
 * gives null under `is-empty`.
 */
export function interpolate(value: unknown, context: FormatContext, op?: string): unknown {
  if (typeof value === 'string') {
    try {
      return formatString(value, context);
    } catch (error) {
      if (error instanceof MissingField) return op === 'is-empty' ? null : value;
      throw error;
    }
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, context, op));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [interpolate(k, context, op) as string, interpolate(v, context, op)]),
    );
  }
  return value;
}
