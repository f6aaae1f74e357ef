import { DOCUMENTED_ERRORS } from './errors.js';
import { RESOURCE_ERRORS } from './resource-errors.js';

/** docs/errors.md, generated from the error table (a test fails when the file is stale). */
export function renderErrorReference(): string {
  const lines = [
    '# Errors',
    '',
    '<!-- Generated from packages/common/src/errors.ts by `npm run docs:generate`. Do not edit. -->',
    '',
    'Every error the REST API returns has a stable code (the class name, as Ironic names it) and',
    'an HTTP status. The body is Ironic\'s: `{"error_message": "<JSON text>"}` where the JSON text',
    'holds `faultcode` (`Client` for 4xx, `Server` for 5xx), `faultstring` (the message) and',
    '`debuginfo` (always null). The same codes cross JSON-RPC between the API and conductors in',
    '`error.data.class`; the client rebuilds only the classes listed here.',
    '',
    'The boot configuration API (`/v1/boot/…`) and agent lookup answer every failure with the same',
    '404 `ResourceNotFound` body on purpose; the log line names the real cause.',
    '',
    '| code | status | meaning |',
    '| --- | --- | --- |',
    ...[...DOCUMENTED_ERRORS, ...RESOURCE_ERRORS].map((e) => `| \`${e.code}\` | ${e.status} | ${e.meaning} |`),
  ];
  return `${lines.join('\n')}\n`;
}
