import { createHash } from 'node:crypto';
import { constants, linkSync, lstatSync, realpathSync } from 'node:fs';
import { lstat, open, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { fileURLToPath } from 'node:url';
import { InvalidParameterValue } from '@bmaas/common';
import { isMissing, lstatIfPresent, removeIfPresent, replaceAtomically, writeFileAtomically } from './atomic-files.js';

/**
 * Where a driver_info image comes from: a file on this host, or an HTTP(S)
 * server. A local source may carry what checkLocalImage found, so placing it
 * does not check it again (see placeBootImage).
 */
export type ImageSource = { kind: 'local'; path: string; checked?: CheckedLocalImage } | { kind: 'http'; url: string };

/**
 * A local image that passed checkLocalImage: its real path and the regular
 * file found there then (device and inode, size and mtime). Placing it
 * links or copies that very file or nothing.
 */
export interface CheckedLocalImage {
  real: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

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
  allowedPaths: AllowedImageDirs | readonly string[];
  /**
   * dest's directory, when the caller made sure of it just before, under the
   * node's lock: 'existing' is not made again; 'new' (made by that call) also
   * holds nothing yet, so dest and its record are neither looked up nor
   * removed first. Unset: made when missing, dest looked up.
   */
  directory?: DestDirectory;
}

/** See PlaceOptions.directory. */
export type DestDirectory = 'new' | 'existing';

/** Never a source of images, whatever [conductor]file_url_allowed_paths lists (as upstream). */
export const FORBIDDEN_IMAGE_DIRS: readonly string[] = ['/dev', '/sys', '/proc', '/boot', '/run', '/etc'];

function isUnder(dir: string, path: string): boolean {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return path === dir || path.startsWith(prefix);
}

/**
 * [conductor]file_url_allowed_paths for a group of checks (one request's
 * images): each directory as written, and resolved (symbolic links followed)
 * at most once and only when a path is not under it as written.
 */
export class AllowedImageDirs {
  private readonly resolved: Array<Promise<string> | undefined> = [];

  constructor(readonly listed: readonly string[]) {}

  /** Whether the real path `real` lies under one of the directories. */
  async contain(real: string): Promise<boolean> {
    for (const [index, dir] of this.listed.entries()) {
      // `real` has no symbolic link in it, so a directory it lies under as written is a real one.
      if (isUnder(normalize(dir), real)) return true;
      this.resolved[index] ??= realpath(dir).catch(() => dir);
      if (isUnder(await (this.resolved[index] as Promise<string>), real)) return true;
    }
    return false;
  }
}

/** The directories as given, or as an AllowedImageDirs of their own when given as a list. */
export function allowedDirsOf(allowed: AllowedImageDirs | readonly string[]): AllowedImageDirs {
  return allowed instanceof AllowedImageDirs ? allowed : new AllowedImageDirs(allowed);
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
  allowedPaths: AllowedImageDirs | readonly string[],
): Promise<string> {
  let real: string;
  try {
    // Synchronous, as the writes of atomic-files.ts (see there): libc's realpath, as fs.promises' is.
    real = realpathSync.native(path);
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
  const allowed = allowedDirsOf(allowedPaths);
  if (await allowed.contain(real)) return real;
  throw new InvalidParameterValue(
    `driver_info.${key}: ${path} is not under [conductor]file_url_allowed_paths (${allowed.listed.join(', ') || 'empty'}).`,
    { key },
  );
}

/**
 * checkLocalImageAllowed, and the regular file its real path names now
 * (InvalidParameterValue when it is none): what placeBootImage places
 * without checking again.
 */
export async function checkLocalImage(
  key: string,
  path: string,
  allowedPaths: AllowedImageDirs | readonly string[],
): Promise<CheckedLocalImage> {
  return regularFile(key, await checkLocalImageAllowed(key, path, allowedPaths));
}

/** What lstat finds at `real` (no link followed), when it is a regular file. */
async function regularFile(key: string, real: string): Promise<CheckedLocalImage> {
  const found = lstatIfPresent(real);
  if (!found?.isFile()) throw new InvalidParameterValue(`driver_info.${key}: ${real} is not a file.`, { key });
  return { real, dev: found.dev, ino: found.ino, size: found.size, mtimeMs: found.mtimeMs };
}

/**
 * Makes `dest` hold the image. A local file is hard-linked, or copied when
 * it is on another file system or may not be linked (a symbolic link would
 * lead outside http_root, which file servers rightly refuse). Downloads go
 * to a temporary file renamed into place. Copies and downloads are skipped
 * while the source is unchanged: same file (device, inode, size, mtime), or
 * the server reports the same ETag (without one, the same size). `dest` is
 * always replaced, never written through, so a hard-linked original is
 * never touched. A local source checked already (`checked`, from
 * checkLocalImage) is not checked again unless its file changed since.
 */
export async function placeBootImage(source: ImageSource, dest: string, options: PlaceOptions): Promise<PlaceOutcome> {
  return source.kind === 'local' ? placeLocalImage(source, dest, options) : downloadImage(source.url, dest, options);
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

/**
 * A local image: checked here, unless the source carries its check (then
 * placed as checked). When the file at its real path is no longer the one
 * checked (replaced, or turned into a symbolic link), it is checked again
 * from the path driver_info gives, once.
 */
async function placeLocalImage(
  source: { path: string; checked?: CheckedLocalImage },
  dest: string,
  options: PlaceOptions,
): Promise<PlaceOutcome> {
  const { key, directory } = options;
  if (source.checked) {
    const outcome = await placeIfUnchanged(source.checked, dest, directory);
    if (outcome !== 'changed') return outcome;
  }
  const outcome = await placeIfUnchanged(
    await checkLocalImage(key, source.path, options.allowedPaths),
    dest,
    directory,
  );
  if (outcome === 'changed') throw changedSinceCheck(key, source.path);
  return outcome;
}

function changedSinceCheck(key: string, path: string): InvalidParameterValue {
  return new InvalidParameterValue(`driver_info.${key}: ${path} changed while it was being placed; try again.`, {
    key,
  });
}

/**
 * placeBootImage of a local file that passed checkLocalImage (or, given a
 * real path, checkLocalImageAllowed: the tests of copies across file systems
 * use it with /dev/shm, which the check refuses). Only the file checked is
 * placed: InvalidParameterValue when another one is found there now.
 */
export async function placeCheckedLocalImage(
  checked: CheckedLocalImage | string,
  dest: string,
  key: string,
): Promise<PlaceOutcome> {
  const image = typeof checked === 'string' ? await regularFile(key, checked) : checked;
  const outcome = await placeIfUnchanged(image, dest);
  if (outcome === 'changed') throw changedSinceCheck(key, image.real);
  return outcome;
}

/**
 * Links (or copies) the checked file to `dest`; 'changed' (and nothing
 * placed) when the file at its real path is not that file any more: the
 * link made is looked at before it is renamed into place, a copy reads from
 * a descriptor opened without following a link and compared first.
 */
async function placeIfUnchanged(
  image: CheckedLocalImage,
  dest: string,
  directory?: DestDirectory,
): Promise<PlaceOutcome | 'changed'> {
  const { real } = image;
  // In a directory just made there is nothing to look at yet.
  const current = directory === 'new' ? undefined : lstatIfPresent(dest);
  if (current?.isFile() && current.dev === image.dev && current.ino === image.ino) return 'unchanged';
  const id = sourceId(`file:${real}`);
  const fingerprint = `${image.dev}:${image.ino}:${image.size}:${image.mtimeMs}`;
  // A record only describes a file at dest: with none there, there is nothing to read.
  if (current && (await currentRecord(dest, id))?.version === fingerprint) return 'unchanged';

  if (directory !== 'new') await removeIfPresent(imageRecordPath(dest));
  const outcome: { placed: 'linked' | 'copied' | 'changed' } = { placed: 'linked' };
  const replace = { directoryExists: directory !== undefined };
  await replaceAtomically(
    dest,
    async (temp) => {
      try {
        linkSync(real, temp);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (isMissing(error)) {
          outcome.placed = 'changed'; // gone since the check
          throw new ChangedSinceCheck();
        }
        if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw error;
        outcome.placed = await copyIfSame(image, temp);
        if (outcome.placed === 'changed') throw new ChangedSinceCheck();
        return;
      }
      const made = lstatSync(temp);
      if (!made.isFile() || made.dev !== image.dev || made.ino !== image.ino) {
        outcome.placed = 'changed';
        throw new ChangedSinceCheck();
      }
    },
    replace,
  ).catch((error: unknown) => {
    if (!(error instanceof ChangedSinceCheck)) throw error;
  });
  if (outcome.placed !== 'copied') return outcome.placed;
  await writeImageRecord(dest, { source: id, version: fingerprint, size: image.size });
  return 'copied';
}

/** Thrown inside replaceAtomically so it removes what was made; never leaves this module. */
class ChangedSinceCheck extends Error {}

/** Copies the checked file to `temp` from a descriptor of it; 'changed' (nothing written) when it is another. */
async function copyIfSame(image: CheckedLocalImage, temp: string): Promise<'copied' | 'changed'> {
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(image.real, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isMissing(error) || code === 'ELOOP') return 'changed';
    throw error;
  }
  try {
    const found = await file.stat();
    if (!found.isFile() || found.dev !== image.dev || found.ino !== image.ino) return 'changed';
    const out = await open(temp, 'wx', 0o644);
    try {
      await pipeline(file.createReadStream(), out.createWriteStream());
    } finally {
      await out.close(); // already closed by the stream: resolves at once
    }
    return 'copied';
  } finally {
    await file.close(); // likewise
  }
}

async function writeImageRecord(dest: string, record: ImageRecord): Promise<void> {
  await writeFileAtomically(imageRecordPath(dest), `${JSON.stringify(record)}\n`);
}

async function downloadImage(url: string, dest: string, options: PlaceOptions): Promise<PlaceOutcome> {
  const id = sourceId(url);
  const shown = redactUrl(url);
  const { directory } = options;
  // In a directory just made there is nothing downloaded yet.
  const known = directory === 'new' ? undefined : await currentRecord(dest, id);

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

  if (directory !== 'new') await removeIfPresent(imageRecordPath(dest));
  let size = 0;
  try {
    await replaceAtomically(
      dest,
      async (temp) => {
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
      },
      { directoryExists: directory !== undefined },
    );
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
