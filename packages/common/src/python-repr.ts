/**
 * A JSON value as Python's repr() writes it. Ironic's refusals quote the
 * offending value this way (its jsonschema messages: "'x' is too long",
 * "5 is not of type 'string'"), and scripts match those messages.
 */
export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') {
    // Python quotes with ' unless the string holds a ' and no ".
    if (value.includes("'") && !value.includes('"')) return `"${value.replace(/\\/g, '\\\\')}"`;
    return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  }
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object') {
    const items = Object.entries(value).map(([key, item]) => `${pythonRepr(key)}: ${pythonRepr(item)}`);
    return `{${items.join(', ')}}`;
  }
  return String(value);
}
