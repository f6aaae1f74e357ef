import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderErrorReference } from './errors-reference.js';

const docs = new URL('../../../docs/', import.meta.url);

describe('generated docs', () => {
  // docs/config-reference.md includes the plug-ins' sections: the conductor's registry checks it.
  it.each([['errors.md', renderErrorReference]])(
    'docs/%s matches the code (run `npm run docs:generate` after changing it)',
    (file, render) => {
      expect(readFileSync(new URL(file, docs), 'utf8')).toBe(render());
    },
  );
});
