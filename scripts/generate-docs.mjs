// Regenerates the docs that are derived from code: docs/config-reference.md and docs/errors.md.
import { writeFileSync } from 'node:fs';
import { renderConfigReference, renderErrorReference } from '../packages/common/dist/index.js';

const docs = new URL('../docs/', import.meta.url);
writeFileSync(new URL('config-reference.md', docs), renderConfigReference());
writeFileSync(new URL('errors.md', docs), renderErrorReference());
console.log('wrote docs/config-reference.md and docs/errors.md');
