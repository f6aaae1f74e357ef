import { createHash } from 'node:crypto';
import { copyFile, link, lstat, open, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { fileURLToPath } from 'node:url';
import { InvalidParameterValue } from '@bmaas/common';
import { isMissing, removeIfPresent, replaceAtomically, writeFileAtomically } from './atomic-files.js';

/** Where a driver_info image comes from: a file on this host, or an HTTP(S) server. */
export type ImageSource = { kind: 'local'; path: string } | { kind: 'http'; url: string };

/** What placeBootImage did. */
export type PlaceOutcome = 'linked' | 'copied' | 'downloaded' | 'unchanged';

/**
 * Reads a driver_info image reference: an absolute path, a file:// URL or an
 * http(s) URL. Anything else (relative paths, image service ids) is refused.
 */
export function parseImageSource(key: string, value: unknown): ImageSource {
  if (typeof value === 'string' && /^https?:\/\//i.test(value)) {
    if (URL.canParse(value)) return { kind: 'http', url: value };
  } else if (typeof value === 'string' && /^file:\/\//i.test(value)) {
    try {
      return { kind: 'local', path: fileURLToPath(value) };
    } catch {
      // Reported below with the accepted forms.
    }
  } else if (typeof value === 'string' && isAbsolute(value)) {
    return { kind: 'local', path: normalize(value) };
  }
  throw new InvalidParameterValue(
    `driver_info.${key} must be an absolute path, a file:// URL or an http(s) URL; got ${JSON.stringify(preview(value))}.`,
    { key },
  );
}

export interface PlaceOptions {
  /** driver_info key, for messages. */
  key: string;
  /** Longest a download may take, in milliseconds. */
  downloadTimeoutMs: number;
  /** [conductor]file_url_allowed_paths: a local image must resolve under one of these. */
  allowedPaths: readonly string[];
}

/** Never a source of images, whatever [conductor]file_url_allowed_paths lists (as upstream). */
export const FORBIDDEN_IMAGE_DIRS: readonly string[] = ['/dev', '/sys', '/proc', '/boot', '/run', '/etc'];

function isUnder(dir: string, path: string): boolean {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return path === dir || path.startsWith(prefix);
}

/**
 * The real path of a local image (symbolic links resolved), once it is
 * known to lie under one of `allowedPaths` (themselves taken as written and
 * resolved) and under none of FORBIDDEN_IMAGE_DIRS. InvalidParameterValue
 * otherwise, naming the driver_info key and the option: without this, any
 * file the conductor can read (/etc/shadow, its own keys) could be put in
 * the http_root and served to anyone.
 */
export async function checkLocalImageAllowed(
  key: string,
  path: string,
  allowedPaths: readonly string[],
): Promise<string> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
    throw new InvalidParameterValue(`driver_info.${key}: ${path} does not exist.`, { key });
  }
  if (FORBIDDEN_IMAGE_DIRS.some((dir) => isUnder(dir, real))) {
    throw new InvalidParameterValue(
      `driver_info.${key}: ${path} is in a system directory (${FORBIDDEN_IMAGE_DIRS.join(', ')}); images may not come from there.`,
      { key },
    );
  }
  for (const dir of allowedPaths) {
    const realDir = await realpath(dir).catch(() => dir);
    if (isUnder(normalize(dir), real) || isUnder(realDir, real)) return real;
  }
  throw new InvalidParameterValue(
    `driver_info.${key}: ${path} is not under [conductor]file_url_allowed_paths (${allowedPaths.join(', ') || 'empty'}).`,
    { key },
  );
}

/**
 * Makes `dest` hold the image. A local file is hard-linked, or copied when
 * it is on another file system or may not be linked (a symbolic link would
 * lead outside http_root, which file servers rightly refuse). Downloads go
 * to a temporary file renamed into place. Copies and downloads are skipped
 * while the source is unchanged: same file (device, inode, size, mtime), or
 * the server reports the same ETag (without one, the same size). `dest` is
 * always replaced, never written through, so a hard-linked original is
 * never touched.
 */
export async function placeBootImage(source: ImageSource, dest: string, options: PlaceOptions): Promise<PlaceOutcome> {
  return source.kind === 'local'
    ? placeLocalImage(source.path, dest, options)
    : downloadImage(source.url, dest, options);
}

/** Removes an image and what placeBootImage remembered about it. Missing files are fine. */
export async function removeBootImage(dest: string): Promise<void> {
  await removeIfPresent(dest);
  await removeIfPresent(imageRecordPath(dest));
}

/**
 * What a copied or downloaded image came from, kept beside it (it holds a
 * hash of the source, never the URL, which may carry credentials).
 */
interface ImageRecord {
  source: string;
  /** File fingerprint of a copy, ETag of a download (null: the server sent none). */
  version: string | null;
  size: number;
}

function imageRecordPath(dest: string): string {
  return join(dirname(dest), `.${basename(dest)}.source.json`);
}

async function readImageRecord(dest: string): Promise<ImageRecord | undefined> {
  try {
    const record = JSON.parse(await readFile(imageRecordPath(dest), 'utf8')) as Partial<ImageRecord>;
    if (typeof record.source !== 'string' || typeof record.size !== 'number') return undefined;
    return {
      source: record.source,
      version: typeof record.version === 'string' ? record.version : null,
      size: record.size,
    };
  } catch {
    return undefined;
  }
}

/** The record of `dest` when it matches the file there and came from `source`. */
async function currentRecord(dest: string, source: string): Promise<ImageRecord | undefined> {
  const record = await readImageRecord(dest);
  if (record?.source !== source) return undefined;
  const present = await lstat(dest).catch(() => undefined);
  return present?.isFile() && present.size === record.size ? record : undefined;
}

function sourceId(source: string): string {
  return createHash('sha256').update(source).digest('hex');
}

async function placeLocalImage(path: string, dest: string, options: PlaceOptions): Promise<PlaceOutcome> {
  return placeCheckedLocalImage(
    await checkLocalImageAllowed(options.key, path, options.allowedPaths),
    dest,
    options.key,
  );
}

/**
 * placeBootImage of a local file whose real path passed
 * checkLocalImageAllowed (module-internal; the tests of copies across file
 * systems use it with /dev/shm, which the check refuses).
 */
export async function placeCheckedLocalImage(real: string, dest: string, key: string): Promise<PlaceOutcome> {
  const source = await stat(real);
  if (!source.isFile()) throw new InvalidParameterValue(`driver_info.${key}: ${real} is not a file.`, { key });

  const current = await lstat(dest).catch((error: unknown) => {
    if (isMissing(error)) return undefined;
    throw error;
  });
  if (current?.isFile() && current.dev === source.dev && current.ino === source.ino) return 'unchanged';
  const id = sourceId(`file:${real}`);
  const fingerprint = `${source.dev}:${source.ino}:${source.size}:${source.mtimeMs}`;
  if ((await currentRecord(dest, id))?.version === fingerprint) return 'unchanged';

  await removeIfPresent(imageRecordPath(dest));
  let copied = false;
  await replaceAtomically(dest, async (temp) => {
    try {
      await link(real, temp);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw error;
      await copyFile(real, temp);
      copied = true;
    }
  });
  if (!copied) return 'linked';
  await writeImageRecord(dest, { source: id, version: fingerprint, size: source.size });
  return 'copied';
}

async function writeImageRecord(dest: string, record: ImageRecord): Promise<void> {
  await writeFileAtomically(imageRecordPath(dest), `${JSON.stringify(record)}\n`);
}

async function downloadImage(url: string, dest: string, options: PlaceOptions): Promise<PlaceOutcome> {
  const id = sourceId(url);
  const shown = redactUrl(url);
  const known = await currentRecord(dest, id);

  const { target, headers } = withCredentialsAsHeader(url);
  if (known?.version) headers['if-none-match'] = known.version;
  const signal = AbortSignal.timeout(options.downloadTimeoutMs);
  let response: Response;
  try {
    response = await fetch(target, { signal, headers });
  } catch (error) {
    throw new Error(`cannot download driver_info.${options.key} from ${shown}: ${reason(error)}`, { cause: error });
  }
  if (response.status === 304 && known) return 'unchanged';
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new InvalidParameterValue(
      `cannot download driver_info.${options.key} from ${shown}: HTTP ${response.status}.`,
      { key: options.key },
    );
  }
  const etag = response.headers.get('etag');
  // fetch decodes a compressed body, so Content-Length only counts when there is no encoding.
  const lengthHeader = response.headers.get('content-encoding') ? null : response.headers.get('content-length');
  const length = lengthHeader === null ? undefined : Number(lengthHeader);
  const unchanged = etag !== null ? etag === known?.version : known?.version === null && length === known.size;
  if (known && unchanged) {
    await response.body.cancel();
    return 'unchanged';
  }

  await removeIfPresent(imageRecordPath(dest));
  let size = 0;
  try {
    await replaceAtomically(dest, async (temp) => {
      // Open before the body is read: a stream that opens its file itself may do so after a
      // cut-off made replaceAtomically remove the (not yet existing) temporary file, leaving it
      // behind for good on a busy machine.
      const file = await open(temp, 'wx', 0o644);
      try {
        const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
        await pipeline(body, file.createWriteStream());
      } finally {
        await file.close(); // already closed by the stream: resolves at once
      }
      size = (await stat(temp)).size;
      if (length !== undefined && size !== length) {
        throw new Error(`got ${size} of ${length} bytes`);
      }
    });
  } catch (error) {
    throw new Error(`cannot download driver_info.${options.key} from ${shown}: ${reason(error)}`, { cause: error });
  }
  await writeImageRecord(dest, { source: id, version: etag, size });
  return 'downloaded';
}

/** fetch refuses URLs with credentials: move them to a Basic Authorization header. */
function withCredentialsAsHeader(url: string): { target: string; headers: Record<string, string> } {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return { target: url, headers: {} };
  const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return {
    target: parsed.toString(),
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
  };
}

/** The URL without user name and password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username || parsed.password) {
      parsed.username = '***';
      parsed.password = '';
    }
    return parsed.toString();
  } catch {
    return '<unparsable URL>';
  }
}

function reason(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const message = error instanceof Error ? error.message : String(error);
  return cause instanceof Error ? `${message} (${cause.message})` : message;
}

function preview(value: unknown): unknown {
  return typeof value === 'string' ? value.slice(0, 200) : value;
}
