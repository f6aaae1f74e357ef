import { InvalidParameterValue } from '@bmaas/common';
import express, { type RequestHandler } from 'express';

/** Deepest nesting of arrays and objects a request body may have (Ironic's documents need a handful). */
export const MAX_JSON_DEPTH = 100;
const OPEN = new Set([0x5b, 0x7b]); // [ {
const CLOSE = new Set([0x5d, 0x7d]); // ] }
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

class BodyTooDeep extends Error {
  readonly status = 400;
  readonly expose = true;
  constructor() {
    super(`The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);
  }
}

/**
 * Throws when the JSON text nests deeper than MAX_JSON_DEPTH. Runs on the raw
 * (decompressed) bytes before JSON.parse, in one pass without recursion, so a
 * document of thousands of levels never reaches code that recurses over it.
 */
export function assertJsonDepth(body: Uint8Array): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i] as number;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (OPEN.has(byte)) {
      if (++depth > MAX_JSON_DEPTH) throw new BodyTooDeep();
    } else if (CLOSE.has(byte)) depth--;
  }
}

/** True when a string anywhere in the document, key or value, holds a NUL character (PostgreSQL cannot store one). */
export function containsNul(document: unknown): boolean {
  const pending: unknown[] = [document];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return true;
    } else if (Array.isArray(value)) {
      pending.push(...value);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (key.includes('\u0000')) return true;
        pending.push(child);
      }
    }
  }
  return false;
}

/** Largest body of the paths that take many items at once (bulk enrolment: 1,000 nodes of up to 16 KiB). */
export const LARGE_BODY_LIMIT = '16mb';

/**
 * JSON request bodies (also application/json-patch+json and other +json
 * types, plain or gzip/deflate encoded): at most 1 MB (LARGE_BODY_LIMIT on
 * `largeBodyPaths`), nested at most MAX_JSON_DEPTH levels, and with no NUL
 * character in any string.
 */
export function jsonBody(options: { largeBodyPaths?: readonly string[] } = {}): RequestHandler[] {
  const parser = (limit: string) =>
    express.json({
      limit,
      strict: false,
      type: ['application/json', 'application/*+json'],
      verify: (_req, _res, buffer) => assertJsonDepth(buffer),
    });
  const small = parser('1mb');
  const large = parser(LARGE_BODY_LIMIT);
  const largeBodyPaths = new Set(options.largeBodyPaths);
  const parse: RequestHandler = (req, res, next) => (largeBodyPaths.has(req.path) ? large : small)(req, res, next);
  const refuseNul: RequestHandler = (req, _res, next) => {
    if (req.body !== undefined && containsNul(req.body)) {
      throw new InvalidParameterValue('Strings in the request body must not contain NUL characters.');
    }
    next();
  };
  return [parse, refuseNul];
}
