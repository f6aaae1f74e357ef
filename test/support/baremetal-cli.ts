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
 * Runs `baremetal <args>` against `endpoint` (OS_ENDPOINT) with a clean environment: no auth
 * (OS_AUTH_TYPE=none), or HTTP basic with `auth` as an operator of an install with generated
 * credentials does (OS_AUTH_TYPE=http_basic, OS_USERNAME, OS_PASSWORD); parses the output
 * of `-f json`. Rejects with the CLI's stderr when it exits non-zero.
 */
export async function baremetal(
  endpoint: string,
  args: readonly string[],
  timeoutMs = 60_000,
  auth?: { username: string; password: string },
): Promise<unknown> {
  if (!BAREMETAL) throw new Error('no `baremetal` on PATH (apt-get install python3-ironicclient)');
  try {
    const { stdout } = await run(BAREMETAL, [...args], {
      timeout: timeoutMs,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LANG: 'C.UTF-8',
        OS_ENDPOINT: endpoint,
        ...(auth
          ? { OS_AUTH_TYPE: 'http_basic', OS_USERNAME: auth.username, OS_PASSWORD: auth.password }
          : { OS_AUTH_TYPE: 'none' }),
      },
    });
    return args.includes('json') ? JSON.parse(stdout) : stdout;
  } catch (error) {
    const failed = error as Error & { stderr?: string; code?: number | string };
    throw new Error(`baremetal ${args.join(' ')} failed (${failed.code}): ${failed.stderr ?? failed.message}`);
  }
}
