import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';

/**
 * Writes `text` to `path` readable and writable by its owner only (0600),
 * through a temporary file renamed into place, so a reader never sees half a
 * secret and an existing file is replaced whole. The mode is set again after
 * the write because the process's umask may have narrowed it.
 */
export function writePrivateFile(path: string, text: string): void {
  const temporary = `${path}.new`;
  writeFileSync(temporary, text, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/** Creates `directory` (and its parents) and makes it the owner's alone (0700). */
export function ensurePrivateDirectory(directory: string): void {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  chmodSync(directory, 0o700);
}
