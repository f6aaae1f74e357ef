/** camelCase <-> snake_case for column names; SQL stays in the stores. */
export function toSnake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const camelNames = new Map<string, string>();

/** Memoised: every column of every row read goes through here, and there are only so many column names. */
export function toCamel(name: string): string {
  let camel = camelNames.get(name);
  if (camel === undefined) {
    camel = name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    if (camelNames.size < 1000) camelNames.set(name, camel);
  }
  return camel;
}

export function rowToRecord<T>(row: Record<string, unknown>): T {
  // for…in, not Object.entries: no array per column (every row read by every store comes through here).
  const out: Record<string, unknown> = {};
  for (const key in row) out[toCamel(key)] = row[key];
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
