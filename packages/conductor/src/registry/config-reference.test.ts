import { readFileSync } from 'node:fs';
import { renderConfigReference } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { pluginConfigSections } from './plugin-config.js';

const docs = new URL('../../../../docs/', import.meta.url);

describe('generated configuration reference', () => {
  it("docs/config-reference.md lists the core options and every descriptor's section (run `npm run docs:generate`)", () => {
    const reference = renderConfigReference(pluginConfigSections());
    expect(readFileSync(new URL('config-reference.md', docs), 'utf8')).toBe(reference);
    expect(reference).toContain('## [pxe]');
  });
});
