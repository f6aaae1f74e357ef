// curl run on one of the topology's hosts (inside its network namespace): what an operator
// would type on that host to check a conductor's JSON-RPC port.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writePrivateFile } from '@bmaas/common';
import type { NetworkHost } from '@bmaas/lab';

export interface CurlOutcome {
  /** curl's exit code: 0, or e.g. 52 (empty reply), 56 (connection reset), 60 (certificate refused). */
  code: number;
  /** The HTTP status, 0 when no HTTP answer came. */
  status: number;
  body: string;
  stderr: string;
}

/**
 * `curl -sS … args` on `host`, bounded to 10 s. `user`'s password goes through a 0600 config
 * file in `workDir` (-K), never through the command line.
 */
export async function curlFrom(
  host: NetworkHost,
  workDir: string,
  args: readonly string[],
  user?: { username: string | null; password: string | null },
): Promise<CurlOutcome> {
  const config = join(workDir, `curl-${randomBytes(4).toString('hex')}.conf`);
  const auth: string[] = [];
  if (user?.username && user.password) {
    writePrivateFile(config, `user = "${user.username}:${user.password}"\n`);
    auth.push('-K', config);
  }
  try {
    return await new Promise((resolve) => {
      execFile(
        'ip',
        ['netns', 'exec', host.namespace, 'curl', '-sS', '-m', '10', '-w', '\\n%{http_code}', ...auth, ...args],
        { timeout: 20_000 },
        (error, stdout, stderr) => {
          const cut = stdout.lastIndexOf('\n');
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
            status: Number(stdout.slice(cut + 1)) || 0,
            body: stdout.slice(0, Math.max(cut, 0)),
            stderr,
          });
        },
      );
    });
  } finally {
    await rm(config, { force: true });
  }
}
