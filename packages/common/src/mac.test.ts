import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidMAC } from './errors.js';
import { macToHyphens, parseMac, tryParseMac } from './mac.js';

const octets = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 6, maxLength: 6 });
const hex = (bytes: number[]) => bytes.map((b) => b.toString(16).padStart(2, '0'));
const randomCase = (text: string, flips: boolean[]) =>
  [...text].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c)).join('');

describe('MAC parsing', () => {
  it('accepts every firmware form, in any case, and returns the canonical form', () => {
    fc.assert(
      fc.property(octets, fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }), (bytes, flips) => {
        const canonical = hex(bytes).join(':');
        const forms = [
          hex(bytes).join(':'),
          hex(bytes).join('-'),
          hex(bytes).join('%3A'),
          hex(bytes).join('%3a'),
          hex(bytes).join(''),
        ];
        for (const form of forms) expect(parseMac(randomCase(form, flips))).toBe(canonical);
      }),
    );
  });

  it('rejects anything else', () => {
    const bad = [
      '',
      'aa:bb:cc:dd:ee',
      'aa:bb:cc:dd:ee:ff:00',
      'aa:bb-cc:dd:ee:ff',
      'gg:bb:cc:dd:ee:ff',
      'aabbccddeef',
      'aabbccddeeff0',
      ' aa:bb:cc:dd:ee:ff',
      'aa:bb:cc:dd:ee:ff\n',
      'aa%3Abb:cc:dd:ee:ff%3A',
      '..%2F..%2Fetc%2Fpasswd',
      'aa:bb:cc:dd:ee:f\u0000',
      'x'.repeat(5000),
    ];
    for (const text of bad) {
      expect(tryParseMac(text), JSON.stringify(text)).toBeUndefined();
      expect(() => parseMac(text)).toThrow(InvalidMAC);
    }
  });

  it('rejects random strings that are not 12 hex digits with uniform separators', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        const digits = text.replace(/%3a/gi, ':');
        const plausible = /^([0-9a-f]{2}([:-]?)){5}[0-9a-f]{2}$/i.test(digits);
        if (!plausible) expect(tryParseMac(text)).toBeUndefined();
      }),
    );
  });

  it('gives the hyphen form iPXE asks for with mac:hexhyp', () => {
    expect(macToHyphens('52:54:00:12:34:56')).toBe('52-54-00-12-34-56');
  });
});
