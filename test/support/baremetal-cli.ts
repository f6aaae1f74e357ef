import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The real `baremetal` CLI (python3-ironicclient), when installed. */
export const BAREMETAL = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((dir) => dir !== '')
  .map((dir) => join(dir, 'baremetal'))
  .find((path) => existsSync(path));

/**
 * Runs `baremetal <args>` with no auth against `endpoint` (OS_AUTH_TYPE=none,
 * OS_ENDPOINT) and a clean environment; parses the output of `-f json`.
 * Rejects with the CLI's stderr when it exits non-zero.
 */
export async function baremetal(endpoint: string, args: readonly string[], timeoutMs = 60_000): Promise<unknown> {
  if (!BAREMETAL) throw new Error('no `baremetal` on PATH (apt-get install python3-ironicclient)');
  try {
    const { stdout } = await run(BAREMETAL, [...args], {
      timeout: timeoutMs,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LANG: 'C.UTF-8',
        OS_AUTH_TYPE: 'none',
        OS_ENDPOINT: endpoint,
      },
    });
    return args.includes('json') ? JSON.parse(stdout) : stdout;
  } catch (error) {
    const failed = error as Error & { stderr?: string; code?: number | string };
    throw new Error(`baremetal ${args.join(' ')} failed (${failed.code}): ${failed.stderr ?? failed.message}`);
  }
}
