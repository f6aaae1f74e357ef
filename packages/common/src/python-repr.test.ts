import { describe, expect, it } from 'vitest';
import { pythonRepr } from './python-repr.js';

describe('pythonRepr', () => {
  it("writes JSON values as Python's repr does", () => {
    expect(pythonRepr('abc')).toBe("'abc'");
    expect(pythonRepr("it's")).toBe('"it\'s"');
    expect(pythonRepr(`'"`)).toBe(`'\\'"'`);
    expect(pythonRepr(null)).toBe('None');
    expect(pythonRepr([true, false, 5, 1.5])).toBe('[True, False, 5, 1.5]');
    expect(pythonRepr({ a: ['x'], b: {} })).toBe("{'a': ['x'], 'b': {}}");
  });
});
