import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiClient, ironicFault } from '@bmaas/api-client';
import { createSilentLogger, freePort, waitFor } from '@bmaas/common';
import { EmbeddedPostgresServer, openDatabase, upgradeSchema } from '@bmaas/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descendants } from '../stack/stack-run.js';
import { type BootFleet, BootStorm, isScriptOf, startBootFleet } from './boot-fleet.js';

/**
 * PostgreSQL frozen (SIGSTOP to the server and every backend) under boot and
 * REST load, then thawed (SIGCONT): during the freeze every boot request gets
 * its 404 within [api]boot_config_rpc_timeout and every REST request a 200 or
 * a 503 with Ironic's error body within the statement and pool bounds; after
 * it everything recovers by itself, with no node state lost and no
 * reservation left behind. The server is this suite's own: the shared test
 * server is never frozen.
 */
const STATEMENT_TIMEOUT_S = 2;
const POOL_TIMEOUT_S = 2;
const BOOT_RPC_TIMEOUT_S = 2;
const FREEZE_S = 8;
/** Slack for a busy two-core machine on each bound (the measured figures are printed). */
const SLACK_MS = 4000;

let dir: string;
let server: EmbeddedPostgresServer;
let fleet: BootFleet;

function postgresProcesses(): number[] {
  const postmaster = Number(readFileSync(join(server.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return [postmaster, ...descendants(postmaster)];
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone meanwhile
    }
  }
}

interface RestSample {
  sentAt: number;
  ms: number;
  status: number;
  text: string;
}

/** GET /v1/nodes/<uuid> in a loop, as an operator's dashboard would, until `stop()`. */
function restLoad(rest: ApiClient, uuids: string[], startedAt: number) {
  const samples: RestSample[] = [];
  let running = true;
  const worker = (async () => {
    let i = 0;
    while (running) {
      const sentAt = Date.now();
      const answer = await rest
        .request('GET', `/v1/nodes/${uuids[i++ % uuids.length]}`)
        .catch((error: Error) => ({ status: 0, text: error.message }));
      samples.push({ sentAt: sentAt - startedAt, ms: Date.now() - sentAt, status: answer.status, text: answer.text });
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await worker;
      return samples;
    },
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bmaas-freeze-pg-'));
  server = new EmbeddedPostgresServer({
    dataDir: join(dir, 'data'),
    port: await freePort(),
    logger: createSilentLogger(),
  });
  const url = await server.start();
  const db = openDatabase({ connection: url });
  try {
    await upgradeSchema(db);
  } finally {
    await db.destroy();
  }
  fleet = await startBootFleet({
    databaseUrl: url,
    conductors: 2,
    nodeCount: 10,
    env: {
      BMAAS_DATABASE__STATEMENT_TIMEOUT: String(STATEMENT_TIMEOUT_S),
      BMAAS_DATABASE__POOL_TIMEOUT: String(POOL_TIMEOUT_S),
      BMAAS_API__BOOT_CONFIG_RPC_TIMEOUT: String(BOOT_RPC_TIMEOUT_S),
      // The freeze is shorter than this: no conductor looks dead to the others because of it.
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '60',
      BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '1',
    },
  });
});

afterAll(async () => {
  if (server) signalAll(postgresProcesses(), 'SIGCONT');
  await fleet?.close();
  await server?.discard();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('fault: PostgreSQL frozen and thawed under load', () => {
  it('answers within bounds while frozen, recovers by itself, loses nothing', async () => {
    const { rest, nodes, apiUrl, stack } = fleet;
    const before = new Map<string, string>();
    for (const node of nodes) before.set(node.uuid, (await rest.node(node.uuid)).provision_state as string);

    const storm = new BootStorm(apiUrl, nodes, 8);
    const dashboard = restLoad(
      rest,
      nodes.map((n) => n.uuid),
      storm.startedAt,
    );
    await new Promise((r) => setTimeout(r, 1500));
    const frozen = postgresProcesses();
    const frozenAt = storm.now();
    signalAll(frozen, 'SIGSTOP');
    await new Promise((r) => setTimeout(r, FREEZE_S * 1000));
    const thawedAt = storm.now();
    signalAll(frozen, 'SIGCONT');

    // Recovery, by itself: every node served again and REST answering 200.
    let recoveredAt = 0;
    await waitFor(
      'boot and REST answers to recover after the thaw',
      async () => {
        const since = storm.samples.filter((s) => s.sentAt > thawedAt && s.status === 200);
        const restOk = dashboard.samples.some((s) => s.sentAt > thawedAt && s.status === 200);
        if (!restOk || !nodes.every((n) => since.some((s) => s.node.uuid === n.uuid))) return undefined;
        recoveredAt = storm.now();
        return true;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const boots = await storm.stop();
    const restSamples = await dashboard.stop();

    const duringFreeze = boots.filter((s) => s.sentAt >= frozenAt && s.answeredAt <= thawedAt);
    expect(duringFreeze.length).toBeGreaterThan(0);
    // /v1/boot: never 5xx, never a hang past its bound, never a wrong script.
    for (const sample of boots) {
      expect(sample.status === 200 || sample.status === 404, `boot answer ${sample.status}`).toBe(true);
      if (sample.status === 200) expect(isScriptOf(sample.body, sample.node)).toBe(true);
    }
    const slowestBootMs = Math.max(...boots.map((s) => s.answeredAt - s.sentAt));
    expect(slowestBootMs).toBeLessThan(BOOT_RPC_TIMEOUT_S * 1000 + SLACK_MS);

    // REST: 200, or 503 with Ironic's error body, within statement + pool bounds.
    const unavailable = restSamples.filter((s) => s.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    for (const sample of restSamples) {
      expect([200, 503], `REST answer ${sample.status} ${sample.text}`).toContain(sample.status);
    }
    for (const sample of unavailable) {
      const fault = ironicFault({ status: 503, body: JSON.parse(sample.text), text: sample.text } as never);
      expect(fault.faultcode).toBe('Server');
      expect(fault.faultstring).toMatch(/database/i);
    }
    const slowestRestMs = Math.max(...restSamples.map((s) => s.ms));
    expect(slowestRestMs).toBeLessThan((STATEMENT_TIMEOUT_S + 1 + POOL_TIMEOUT_S) * 1000 + SLACK_MS);

    // Nothing lost: the same states, no lock left, every process still up.
    for (const node of nodes) {
      const now = await rest.node(node.uuid);
      expect(now.provision_state, node.uuid).toBe(before.get(node.uuid));
      expect(now.reservation ?? null, node.uuid).toBeNull();
    }
    for (const p of stack.processes()) expect(p.running, p.name).toBe(true);
    console.info(
      `[faults] PostgreSQL frozen ${FREEZE_S} s under load: /v1/boot slowest answer ${slowestBootMs} ms ` +
        `(bound ${BOOT_RPC_TIMEOUT_S} s), REST slowest ${slowestRestMs} ms with ${unavailable.length} × 503; ` +
        `recovered ${((recoveredAt - thawedAt) / 1000).toFixed(1)} s after the thaw; ${boots.length} boot requests, ` +
        `${boots.filter((s) => s.status >= 500).length} 5xx; no state lost`,
    );
  });
});
