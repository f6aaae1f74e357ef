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

/**
 * A row → its record, camelCase fields in the columns' order. The record is a copy of an empty
 * record of its shape, not an object grown key by key: past about sixteen properties set by
 * computed names, V8 keeps an object as a hash table (a node's sixty columns: 3 KB, and slower
 * to read), while copies of one object share its compact layout.
 */
export function rowToRecord<T>(row: Record<string, unknown>): T {
  const { fields, empty } = shapeOf(row);
  const out: Record<string, unknown> = { ...empty };
  let index = 0;
  // for…in, not Object.entries: no array per column (every row read by every store comes through here).
  for (const key in row) out[fields[index++] as string] = row[key];
  return out as T;
}

/** The records made of rows with one list of columns: their fields, and an empty one to copy. */
interface RecordShape {
  readonly columns: readonly string[];
  readonly fields: readonly string[];
  readonly empty: Readonly<Record<string, unknown>>;
}

/** By first column (many tables start with id): the column lists of a handful of tables and queries. */
const shapesByFirstColumn = new Map<string, RecordShape[]>();

function shapeOf(row: Record<string, unknown>): RecordShape {
  let first = '';
  for (const key in row) {
    first = key;
    break;
  }
  let shapes = shapesByFirstColumn.get(first);
  for (const shape of shapes ?? []) if (hasColumns(row, shape.columns)) return shape;
  const columns = Object.keys(row);
  const fields = columns.map(toCamel);
  const grown: Record<string, unknown> = {};
  for (const field of fields) grown[field] = null;
  // The copy of the grown object, not the grown one (a hash table itself), is the one to copy.
  const shape: RecordShape = { columns, fields, empty: { ...grown } };
  if (shapes === undefined && shapesByFirstColumn.size < 1000) {
    shapes = [];
    shapesByFirstColumn.set(first, shapes);
  }
  if (shapes !== undefined && shapes.length < 32) shapes.push(shape);
  return shape;
}

function hasColumns(row: Record<string, unknown>, columns: readonly string[]): boolean {
  let index = 0;
  for (const key in row) if (columns[index++] !== key) return false;
  return index === columns.length;
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
