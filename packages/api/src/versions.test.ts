import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { honestMaximum, MAX_MINOR, MAX_VERSION, MICROVERSIONS, type Microversion } from './versions.js';

const DOCS = new URL('../../../docs/api.md', import.meta.url);

describe('microversion table', () => {
  it('lists every version from 1.1 to 1.115 once, in order', () => {
    const minors = MICROVERSIONS.map((row) => row.minor);
    expect(minors).toEqual(Array.from({ length: 115 }, (_, i) => i + 1));
  });

  it('advertises the version just below the first feature not served', () => {
    const row = (minor: number, status: Microversion['status']): Microversion => ({ minor, feature: 'f', status });
    expect(honestMaximum([row(1, 'served'), row(2, 'served')])).toBe(2);
    expect(honestMaximum([row(1, 'served'), row(3, 'served'), row(4, 'not served'), row(5, 'served')])).toBe(3);
    const firstNotServed = MICROVERSIONS.find((r) => r.status === 'not served');
    expect(MAX_MINOR).toBe(firstNotServed ? firstNotServed.minor - 1 : 115);
    expect(MAX_VERSION).toBe(`1.${MAX_MINOR}`);
  });

  it('is the table docs/api.md shows, row for row, and the maximum the docs name', () => {
    const docs = readFileSync(DOCS, 'utf8');
    const rows = [...docs.matchAll(/^\| 1\.(\d+) \| ([^|]+) \| (yes|no) \|$/gm)].map((m) => ({
      minor: Number(m[1]),
      feature: (m[2] as string).trim(),
      status: m[3] === 'yes' ? 'served' : 'not served',
    }));
    expect(rows).toEqual(MICROVERSIONS.map((r) => ({ ...r })));
    expect(docs).toContain(`X-OpenStack-Ironic-API-Maximum-Version: ${MAX_VERSION}`);
    expect(docs).toContain(`**The maximum is ${MAX_VERSION},`);
  });
});
