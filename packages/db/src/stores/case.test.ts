import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { recordToColumns, rowToRecord, toCamel, toSnake } from './case.js';

/** V8's own answer to "is this object a hash table?" (natives syntax, allowed for this check only). */
function hasFastProperties(object: object): boolean {
  setFlagsFromString('--allow-natives-syntax');
  const check = new Function('object', 'return %HasFastProperties(object)') as (value: object) => boolean;
  setFlagsFromString('--no-allow-natives-syntax');
  return check(object);
}

describe('column and field names', () => {
  it('converts between snake_case and camelCase', () => {
    expect(toCamel('driver_internal_info')).toBe('driverInternalInfo');
    expect(toSnake('driverInternalInfo')).toBe('driver_internal_info');
    expect(toCamel('uuid')).toBe('uuid');
  });

  it('makes a record of a row, keeping every value as it is', () => {
    const createdAt = new Date();
    const properties = { cpus: 4 };
    expect(
      rowToRecord({ id: 7, provision_state: 'active', created_at: createdAt, properties, last_error: null }),
    ).toEqual({
      id: 7,
      provisionState: 'active',
      createdAt,
      properties,
      lastError: null,
    });
  });

  it('makes a plain object of a row of many columns, not a hash table', () => {
    // A node has about sixty columns; set by computed names, V8 would keep the record as a dictionary.
    const row: Record<string, unknown> = {};
    for (let index = 0; index < 64; index++) row[`c${index}_value`] = index;
    const dictionary: Record<string, unknown> = {};
    for (const key in row) dictionary[key] = row[key];
    expect(hasFastProperties(dictionary)).toBe(false);

    const record = rowToRecord<Record<string, unknown>>(row);
    expect(hasFastProperties(record)).toBe(true);
    expect(record.c63Value).toBe(63);
    expect(Object.keys(record)).toHaveLength(64);
  });

  it('gives rows of other columns, or of the same columns in another order, records of their own', () => {
    expect(rowToRecord({ id: 1, node_name: 'a' })).toEqual({ id: 1, nodeName: 'a' });
    expect(rowToRecord({ id: 2, mac_address: 'm' })).toEqual({ id: 2, macAddress: 'm' });
    expect(rowToRecord({ id: 3 })).toEqual({ id: 3 });
    expect(rowToRecord({ id: 4, node_name: 'b', extra_column: true })).toEqual({
      id: 4,
      nodeName: 'b',
      extraColumn: true,
    });
    const reordered = rowToRecord<Record<string, unknown>>({ node_name: 'c', id: 5 });
    expect(Object.keys(reordered)).toEqual(['nodeName', 'id']);
    expect(reordered).toEqual({ nodeName: 'c', id: 5 });
    expect(rowToRecord({})).toEqual({});
    // Records do not share values: each is a copy.
    const first = rowToRecord<Record<string, unknown>>({ id: 6, node_name: 'd' });
    const second = rowToRecord<Record<string, unknown>>({ id: 7, node_name: 'e' });
    first.nodeName = 'changed';
    expect(second.nodeName).toBe('e');
  });

  it('writes JSON columns as JSON text and leaves out undefined fields', () => {
    expect(
      recordToColumns({ driverInfo: { a: 1 }, name: 'n', lastError: undefined }, new Set(['driver_info'])),
    ).toEqual({ driver_info: '{"a":1}', name: 'n' });
  });
});
