/*
 * The file-system calls here are synchronous on purpose. They are metadata
 * calls (mkdir, link, symlink, rename, unlink, lstat, readlink) and reads and
 * writes of files of a few hundred bytes, in a local http_root that the page
 * cache holds, under a node's lock: each takes microseconds, where a round
 * trip through libuv's thread pool (fs.promises) costs several times their CPU
 * (26–47 against 10–13 µs per call measured on the two-core test machine), and
 * a deploy start makes about twenty of them. The boot path reads the node files
 * synchronously for the same reason (HttpRootLayout.readNodeFile). Image
 * copies and downloads, which move megabytes, stay asynchronous. This assumes
 * a local [deploy]http_root: on a slow network file system each call would hold
 * the event loop for as long as it takes (docs/performance.md, "Synchronous
 * file-system calls in the http root").
 */
import { randomBytes } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  type Stats,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * A fresh name beside `path` for building a file before renaming it into
 * place. Same directory (so rename is atomic) and a leading dot (so static
 * file servers do not serve half-written files).
 */
export function tempPathBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
}

export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export interface ReplaceOptions {
  /**
   * The caller made the directory itself just before (under the node's
   * lock): it is not made again. Default false: made when missing.
   */
  directoryExists?: boolean;
}

/**
 * Puts whatever `create(tempPath)` makes at `path` with one rename, so a
 * reader sees the old file or the new one, never a part. The temporary file
 * is removed when anything fails.
 */
export async function replaceAtomically(
  path: string,
  create: (tempPath: string) => Promise<void>,
  options: ReplaceOptions = {},
): Promise<void> {
  if (!options.directoryExists) mkdirSync(dirname(path), { recursive: true });
  const temp = tempPathBeside(path);
  try {
    await create(temp);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Writes `content` to `path` atomically (see replaceAtomically). */
export async function writeFileAtomically(path: string, content: string, options: ReplaceOptions = {}): Promise<void> {
  await replaceAtomically(path, async (temp) => writeFileSync(temp, content, { flag: 'wx', mode: 0o644 }), options);
}

/** Writes `content` only when the file holds something else; returns whether it wrote. */
export async function writeFileIfChanged(path: string, content: string): Promise<boolean> {
  let current: string | undefined;
  try {
    current = readFileSync(path, 'utf8');
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  if (current === content) return false;
  await writeFileAtomically(path, content);
  return true;
}

/** Makes `path` a symbolic link to `target`, replacing what is there atomically; returns whether it changed. */
export async function linkIfChanged(target: string, path: string): Promise<boolean> {
  if ((await readLinkIfPresent(path)) === target) return false;
  await replaceLink(target, path);
  return true;
}

/**
 * Makes `path` a symbolic link to `target`, replacing whatever is there
 * atomically, without reading it first. The directory is made only when
 * the link cannot be made for want of it: symlink(2) fails with ENOENT
 * for nothing else (its target need not exist).
 */
export async function replaceLink(target: string, path: string): Promise<void> {
  await replaceAtomically(
    path,
    async (temp) => {
      try {
        symlinkSync(target, temp);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        mkdirSync(dirname(path), { recursive: true });
        symlinkSync(target, temp);
      }
    },
    { directoryExists: true },
  );
}

/** The target of the symbolic link at `path`, or undefined when there is none. */
export async function readLinkIfPresent(path: string): Promise<string | undefined> {
  try {
    return readlinkSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isMissing(error) || code === 'EINVAL') return undefined;
    throw error;
  }
}

/** Removes a file or link; a missing one is fine. */
export async function removeIfPresent(path: string): Promise<void> {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

/** What lstat finds at `path` (no link followed), or undefined when nothing is there. */
export function lstatIfPresent(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
