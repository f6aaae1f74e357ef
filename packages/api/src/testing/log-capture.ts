import { PassThrough } from 'node:stream';
import { createRootLogger, type Logger } from '@bmaas/common';

/** A JSON root logger at debug level whose lines a test reads back, parsed, in `lines`. */
export function captureLog(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const stream = new PassThrough();
  const lines: Array<Record<string, unknown>> = [];
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  return { logger: createRootLogger({ level: 'debug', format: 'json', stream }), lines };
}
