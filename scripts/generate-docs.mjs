// Regenerates the docs that are derived from code: docs/config-reference.md (the core options and
// every interface descriptor's own section, as the conductor loads them) and docs/errors.md.
import { writeFileSync } from 'node:fs';
import { renderErrorReference } from '../packages/common/dist/index.js';
import { renderConductorConfigReference } from '../packages/conductor/dist/index.js';

const docs = new URL('../docs/', import.meta.url);
writeFileSync(new URL('config-reference.md', docs), renderConductorConfigReference());
writeFileSync(new URL('errors.md', docs), renderErrorReference());
console.log('wrote docs/config-reference.md and docs/errors.md');
