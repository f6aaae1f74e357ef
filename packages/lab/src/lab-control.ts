// The lab process's control socket, asked by `npm run lab` and by the lab's tests alike.
import http from 'node:http';
import { waitFor } from '@bmaas/common';
import type { LabDescription } from './lab-machines.js';
import type { LabPaths } from './lab-paths.js';
import { readIfExists, tail } from './wait.js';

export interface LabAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** One request to the lab process on its control socket; undefined while none listens. */
export function askLabProcess(
  socketPath: string,
  method: string,
  path: string,
  timeoutMs = 600_000,
): Promise<LabAnswer | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** The lab's description after `method path`; undefined when no lab process answers; throws on a refusal. */
export async function askLab(paths: LabPaths, method: string, path: string): Promise<LabDescription | undefined> {
  const answer = await askLabProcess(paths.controlSocket, method, path);
  if (answer === undefined) return undefined;
  if (answer.status !== 200) throw new Error(`lab process: ${answer.body.error ?? answer.status}`);
  return answer.body as unknown as LabDescription;
}

/** Waits for a lab process just started to answer; gives up at once when `exited()` says it is gone. */
export function waitForLabProcess(paths: LabPaths, exited: () => boolean, timeoutMs: number): Promise<LabDescription> {
  return waitFor('the lab process to answer on its control socket', () => askLab(paths, 'GET', '/lab'), {
    timeoutMs,
    intervalMs: 200,
    abortReason: () => (exited() ? 'the lab process exited' : null),
    describe: async () =>
      `the lab process did not start (log ${paths.log}):\n${tail(await readIfExists(paths.log), 20)}`,
  });
}
