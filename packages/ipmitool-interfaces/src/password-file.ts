import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `fn` with the path of a file holding `password` (ipmitool -f): a
 * private directory (0700) and a 0600 file, removed when `fn` settles, so
 * the password is never in a process's arguments or environment.
 */
export async function withPasswordFile<T>(password: string, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'bmaas-ipmi-'));
  try {
    const path = join(dir, 'password');
    // ipmitool reads the first line; an empty password is written as a NUL, as upstream does.
    await writeFile(path, password === '' ? '\0' : password, { mode: 0o600 });
    return await fn(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
