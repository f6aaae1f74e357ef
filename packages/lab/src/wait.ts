// Waits on log files (serial consoles, dnsmasq logs) and sockets, through the one poller.
import { access, readFile } from 'node:fs/promises';
import { waitFor } from '@bmaas/common';

export interface WaitForFileOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Gives up early (after one last read) once this returns a reason, e.g. "qemu exited". */
  abortReason?: () => string | null;
}

export async function readIfExists(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

/** Polls a growing file until its contents match pattern. */
export function waitForFileMatch(
  path: string,
  pattern: RegExp,
  options: WaitForFileOptions,
): Promise<RegExpMatchArray> {
  let text = '';
  return waitFor(
    `${pattern} in ${path}`,
    async () => {
      text = await readIfExists(path);
      return text.match(pattern) ?? undefined;
    },
    { ...options, describe: () => `last lines:\n${tail(text, 15)}` },
  );
}

/** Polls until `path` exists (e.g. the socket a process creates once it listens). */
export function waitForPath(path: string, options: WaitForFileOptions): Promise<void> {
  return waitFor(
    `${path} to appear`,
    () =>
      access(path).then(
        () => true as const,
        () => undefined,
      ),
    { intervalMs: 50, ...options },
  ).then(() => undefined);
}

export function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}
