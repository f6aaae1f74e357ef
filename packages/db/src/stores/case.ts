/** camelCase <-> snake_case for column names; SQL stays in the stores. */
export function toSnake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

export function toCamel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

export function rowToRecord<T>(row: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[toCamel(key)] = value;
  return out as T;
}

/** Columns for an INSERT/UPDATE; JSON objects are passed as JSON text for jsonb. */
export function recordToColumns(
  record: Record<string, unknown>,
  jsonColumns: ReadonlySet<string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined) continue;
    const column = toSnake(key);
    out[column] = jsonColumns.has(column) && value !== null ? JSON.stringify(value) : value;
  }
  return out;
}
