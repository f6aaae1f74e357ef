import { existsSync, rmSync } from 'node:fs';
import { freePort, freePortBlock, waitFor } from '@bmaas/common';
import { stateTempDir } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bannerPids, installLogin, STACK_MAIN, StackRun } from '../stack/stack-run.js';

/**
 * The API killed (SIGKILL) while PATCHes that change two fields at once are
 * in flight, under `npm start`: each client gets the answer or an error,
 * never a half-applied change, and the launcher brings the API back.
 */
const START_TIMEOUT_MS = 90_000;
const WRITERS = 8;

let stateDir: string;
let run: StackRun;
let apiUrl: string;
let authorization: string;

interface Outcome {
  value: string;
  status: number;
  description?: string;
  marker?: string;
}

async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      Authorization: authorization,
      'X-OpenStack-Ironic-API-Version': '1.78',
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  if (!existsSync(STACK_MAIN)) throw new Error(`${STACK_MAIN} is missing: build first (npm run build)`);
  stateDir = stateTempDir('bmaas-api-kill-');
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BMAAS_')));
  run = new StackRun(
    [
      '--conductors',
      '1',
      '--api-port',
      String(apiPort),
      '--json-rpc-base-port',
      String(await freePortBlock(1)),
      '--http-base-port',
      String(await freePortBlock(1)),
    ],
    {
      ...env,
      BMAAS_DEFAULT__STATE_PATH: stateDir,
      BMAAS_DATABASE__EMBEDDED_PORT: String(await freePort()),
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
    },
  );
  await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);
  authorization = installLogin(stateDir);
});

afterAll(async () => {
  if (run?.running) {
    run.signal('SIGTERM');
    await run.waitForExit(60_000).catch(() => run.killGroup());
  }
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

describe('fault: the API killed mid-request under npm start', () => {
  it('never leaves a half-applied change, and comes back by itself', async () => {
    const created = await rest('POST', '/v1/nodes', { driver: 'fake-hardware', name: 'api-kill' });
    expect(created.status).toBe(201);
    const uuid = (created.body as { uuid: string }).uuid;
    const apiPid = bannerPids(run).get('api') as number;

    // Writers change two fields in one PATCH, each with its own value, until the API dies.
    const outcomes: Outcome[] = [];
    let killed = false;
    let counter = 0;
    const writers = Array.from({ length: WRITERS }, async () => {
      while (!killed) {
        const value = `v${counter++}`;
        const answer = await rest('PATCH', `/v1/nodes/${uuid}`, [
          { op: 'replace', path: '/description', value },
          { op: 'add', path: '/extra/marker', value },
        ]).catch(() => ({ status: 0, body: undefined }));
        const node = answer.body as { description?: string; extra?: { marker?: string } } | undefined;
        outcomes.push({ value, status: answer.status, description: node?.description, marker: node?.extra?.marker });
      }
    });
    await waitFor('some PATCHes answered', async () => (outcomes.length >= 20 ? true : undefined), {
      timeoutMs: 30_000,
    });
    const killedAt = Date.now();
    process.kill(apiPid, 'SIGKILL');
    killed = true;
    await Promise.all(writers);

    await run.waitForOutput(/api \(pid \d+\) exited on its own \(killed by SIGKILL\); restarting it/, 10_000);
    const restarted = await run.waitForOutput(/api restarted \(pid (\d+)\)/, 30_000);
    expect(Number(restarted[1])).not.toBe(apiPid);
    const node = await waitFor(
      'the restarted API to answer',
      async () => {
        const answer = await rest('GET', `/v1/nodes/${uuid}`).catch(() => undefined);
        return answer?.status === 200
          ? (answer.body as { description: string; extra: { marker?: string } })
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

    const backAfterS = (Date.now() - killedAt) / 1000;
    // Each client: the whole answer (both fields its own value) or an error, nothing between.
    for (const outcome of outcomes) {
      if (outcome.status === 200) {
        expect(outcome.description, outcome.value).toBe(outcome.value);
        expect(outcome.marker, outcome.value).toBe(outcome.value);
      } else {
        expect([0, 503], `${outcome.value}: ${outcome.status}`).toContain(outcome.status);
      }
    }
    // The node: both fields from the same PATCH, one that some client sent.
    expect(node.extra.marker).toBe(node.description);
    expect(outcomes.map((o) => o.value)).toContain(node.description);
    const failed = outcomes.filter((o) => o.status !== 200).length;
    console.info(
      `[faults] API killed with ${WRITERS} PATCHes in flight: ${outcomes.length - failed} answered, ${failed} got an error, ` +
        `none half-applied; restarted by the launcher and answering ${backAfterS.toFixed(1)} s after the kill`,
    );
  });
});
