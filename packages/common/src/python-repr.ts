/**
 * A value as Python's repr() shows it: Ironic quotes patches, inspection rule
 * values and paths this way in its messages, and clients match on them.
 */
export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${pythonRepr(k)}: ${pythonRepr(v)}`,
    );
    return `{${entries.join(', ')}}`;
  }
  return String(value);
}
