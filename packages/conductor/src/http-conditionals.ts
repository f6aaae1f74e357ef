import type { IncomingHttpHeaders } from 'node:http';

/**
 * What a static file server answers to validators and ranges (RFC 9110,
 * sections 8.8, 13 and 14), as nginx does for files: a strong ETag from the
 * inode, size and modification time, Last-Modified, If-None-Match /
 * If-Modified-Since (304), one byte range per request (206, or 416 when it
 * starts past the end) and If-Range. Several ranges in one request are
 * answered with the whole file, which RFC 9110 allows (14.2).
 */

/** The file facts the validators come from (a Stats of the opened file). */
export interface FileVersion {
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * Strong: a boot file is replaced by a rename (a new inode), never written
 * in place, so the same inode, size and mtime mean the same bytes.
 */
export function etagOf(file: FileVersion): string {
  return `"${file.ino.toString(16)}-${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`;
}

/** Last-Modified is in whole seconds; comparisons are made at that precision. */
const wholeSeconds = (ms: number) => Math.floor(ms / 1000) * 1000;

export function lastModifiedOf(file: FileVersion): string {
  return new Date(file.mtimeMs).toUTCString();
}

const opaque = (tag: string) => tag.replace(/^W\//, '');

/**
 * Whether a GET or HEAD is answered 304: If-None-Match when present (weak
 * comparison, `*` matches), else If-Modified-Since.
 */
export function notModified(headers: IncomingHttpHeaders, file: FileVersion): boolean {
  const noneMatch = headers['if-none-match'];
  if (noneMatch !== undefined) {
    if (noneMatch.trim() === '*') return true;
    const ours = opaque(etagOf(file));
    return noneMatch.split(',').some((tag) => opaque(tag.trim()) === ours);
  }
  const since = headers['if-modified-since'];
  if (since === undefined) return false;
  const date = Date.parse(since);
  return !Number.isNaN(date) && wholeSeconds(file.mtimeMs) <= date;
}

/**
 * Whether a Range may be honoured: no If-Range, or one naming this very
 * version: the ETag, compared strongly (a weak tag never matches), or
 * exactly the Last-Modified date.
 */
function ifRangeHolds(headers: IncomingHttpHeaders, file: FileVersion): boolean {
  if (headers['if-range'] === undefined) return true;
  const condition = String(headers['if-range']).trim();
  if (condition.startsWith('"') || condition.startsWith('W/')) return condition === etagOf(file);
  const date = Date.parse(condition);
  return !Number.isNaN(date) && date === wholeSeconds(file.mtimeMs);
}

/** The part of the file to send: all of it, one range (inclusive end), or none (416). */
export type Selection = { kind: 'whole' } | { kind: 'range'; start: number; end: number } | { kind: 'unsatisfiable' };

/**
 * The answer a Range header asks for. A header that is not one valid
 * `bytes=` range set is ignored (whole file), as RFC 9110 says; a set of
 * several ranges gets the whole file too. A single range that starts past
 * the end, or a suffix of length 0, cannot be satisfied.
 */
export function selectRange(headers: IncomingHttpHeaders, file: FileVersion): Selection {
  const header = headers.range;
  if (header === undefined || !ifRangeHolds(headers, file)) return { kind: 'whole' };
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match) return { kind: 'whole' };
  const specs = (match[1] as string).split(',').map((s) => s.trim());
  if (specs.length !== 1) return { kind: 'whole' };
  const spec = specs[0] as string;
  const size = file.size;
  const suffix = /^-(\d+)$/.exec(spec);
  if (suffix) {
    const length = Number(suffix[1]);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - length), end: size - 1 };
  }
  const bounded = /^(\d+)-(\d*)$/.exec(spec);
  if (!bounded) return { kind: 'whole' };
  const start = Number(bounded[1]);
  const last = bounded[2] === '' ? Number.POSITIVE_INFINITY : Number(bounded[2]);
  // first-pos > last-pos makes the range set invalid: ignored, not unsatisfiable (RFC 9110 14.1.1).
  if (last < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(last, size - 1) };
}
