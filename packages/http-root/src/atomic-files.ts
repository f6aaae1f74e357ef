import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readlink, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
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
  if (!options.directoryExists) await mkdir(dirname(path), { recursive: true });
  const temp = tempPathBeside(path);
  try {
    await create(temp);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** Writes `content` to `path` atomically (see replaceAtomically). */
export async function writeFileAtomically(path: string, content: string, options: ReplaceOptions = {}): Promise<void> {
  await replaceAtomically(path, (temp) => writeFile(temp, content, { flag: 'wx', mode: 0o644 }), options);
}

/** Writes `content` only when the file holds something else; returns whether it wrote. */
export async function writeFileIfChanged(path: string, content: string): Promise<boolean> {
  const current = await readFile(path, 'utf8').catch((error: unknown) => {
    if (isMissing(error)) return undefined;
    throw error;
  });
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
        await symlink(target, temp);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        await mkdir(dirname(path), { recursive: true });
        await symlink(target, temp);
      }
    },
    { directoryExists: true },
  );
}

/** The target of the symbolic link at `path`, or undefined when there is none. */
export async function readLinkIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readlink(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isMissing(error) || code === 'EINVAL') return undefined;
    throw error;
  }
}

/** Removes a file or link; a missing one is fine. */
export async function removeIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}
