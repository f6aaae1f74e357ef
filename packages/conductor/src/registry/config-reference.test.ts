import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConductorConfigReference } from './plugin-config.js';

const docs = new URL('../../../../docs/', import.meta.url);

describe('generated configuration reference', () => {
  it("docs/config-reference.md lists the core options and every descriptor's section (run `npm run docs:generate`)", () => {
    const reference = renderConductorConfigReference();
    expect(readFileSync(new URL('config-reference.md', docs), 'utf8')).toBe(reference);
    expect(reference).toContain('## [pxe]');
  });
});
