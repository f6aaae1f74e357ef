import { waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { ConductorProcess } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootFleet, BootStorm, isScriptOf, startBootFleet } from './boot-fleet.js';

/**
 * kill -9 of a conductor in the middle of a boot storm over its nodes: every
 * node is served by a new owner after heartbeat_timeout and one takeover
 * pass, none is stranded, and no answer is ever another node's script or a
 * script naming the dead conductor's files.
 */
const HEARTBEAT_TIMEOUT_S = 4;
const TAKEOVER_PASS_S = 1;
const NODE_COUNT = 30;
/** Slack on top of heartbeat_timeout + one pass for a busy two-core machine (the figure is printed). */
const SLACK_S = 20;

let database: TestDatabase;
let fleet: BootFleet;

beforeAll(async () => {
  database = await createTestDatabase();
  fleet = await startBootFleet({
    databaseUrl: database.url,
    conductors: 3,
    nodeCount: NODE_COUNT,
    env: {
      BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '1',
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT_S),
      BMAAS_CONDUCTOR__CHECK_PROVISION_STATE_INTERVAL: String(TAKEOVER_PASS_S),
    },
  });
});

afterAll(async () => {
  await fleet?.close();
  await database?.drop();
});

describe('fault: kill -9 of a conductor during a boot storm', () => {
  it('serves every node from its new owner, strands none, and never serves a wrong script', async () => {
    const { rest, nodes, stack, httpUrlOf } = fleet;
    const ownerBefore = new Map<string, string>();
    for (const node of nodes) ownerBefore.set(node.uuid, (await rest.node(node.uuid)).conductor as string);
    const victim = stack.conductors[0] as ConductorProcess;
    const victimUrl = httpUrlOf.get(victim.hostname) as string;
    const orphaned = nodes.filter((n) => ownerBefore.get(n.uuid) === victim.hostname);
    expect(orphaned.length).toBeGreaterThan(0);

    const storm = new BootStorm(fleet.apiUrl, nodes, 16);
    await new Promise((r) => setTimeout(r, 2000));
    const killedAt = storm.now();
    victim.process.signal('SIGKILL');
    expect((await victim.process.exited).signal).toBe('SIGKILL');

    // Every orphan served again, by a survivor, within heartbeat_timeout + one takeover pass + slack.
    const servedAt = new Map<string, number>();
    await waitFor(
      "every one of the victim's nodes to be served by a new owner",
      async () => {
        for (const sample of storm.samples) {
          if (sample.sentAt > killedAt && sample.status === 200 && !servedAt.has(sample.node.uuid)) {
            if (!sample.body.includes(victimUrl)) servedAt.set(sample.node.uuid, sample.answeredAt - killedAt);
          }
        }
        return orphaned.every((n) => servedAt.has(n.uuid)) ? true : undefined;
      },
      {
        timeoutMs: (HEARTBEAT_TIMEOUT_S + TAKEOVER_PASS_S + SLACK_S) * 1000,
        intervalMs: 200,
        describe: () => `${orphaned.filter((n) => !servedAt.has(n.uuid)).length} of ${orphaned.length} still unserved`,
      },
    );
    await new Promise((r) => setTimeout(r, 1000));
    const samples = await storm.stop();

    // No wrong script at any time: a 200 is always the script of the node asked for, and after
    // the kill never one pointing at the dead conductor's files.
    const served = samples.filter((s) => s.status === 200);
    expect(served.length).toBeGreaterThan(nodes.length);
    for (const sample of served) {
      expect(isScriptOf(sample.body, sample.node), `answer for ${sample.node.uuid}`).toBe(true);
      if (sample.sentAt > killedAt) expect(sample.body, 'served after the kill').not.toContain(victimUrl);
    }
    // Refusals are the uniform 404, never a 5xx.
    expect(samples.filter((s) => s.status >= 500)).toEqual([]);
    expect(new Set(samples.filter((s) => s.status !== 200).map((s) => s.status))).toEqual(
      new Set(samples.some((s) => s.status === 404) ? [404] : []),
    );

    // Stranded: none. Each orphan has a live owner and no lock of the dead conductor.
    for (const node of nodes) {
      const now = await rest.node(node.uuid);
      expect(now.conductor, node.uuid).not.toBe(victim.hostname);
      expect(now.reservation ?? null, node.uuid).toBeNull();
      expect(now.provision_state).toBe('wait call-back');
    }
    const slowest = Math.max(...servedAt.values()) / 1000;
    console.info(
      `[faults] kill -9 of ${victim.hostname} (${orphaned.length} of ${nodes.length} nodes) during a boot storm: ` +
        `every node served by its new owner ${slowest.toFixed(1)} s after the kill ` +
        `(heartbeat_timeout ${HEARTBEAT_TIMEOUT_S} s + takeover pass ${TAKEOVER_PASS_S} s); ` +
        `${samples.length} requests, ${served.length} served, ${samples.filter((s) => s.status === 404).length} refused (404), 0 wrong`,
    );
  });
});
