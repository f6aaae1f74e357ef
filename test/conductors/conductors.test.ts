import { randomUUID } from 'node:crypto';
import { AgentDouble } from '@bmaas/agent-client/testing';
import {
  createSilentLogger,
  InvalidStateRequested,
  mapLimit,
  NodeLocked,
  type NodeRecord,
  Registry,
  TemporaryFailure,
  waitFor,
} from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { ConductorRing, JsonRpcConductorClient, RpcCallMetrics } from '@bmaas/rpc-client';
import type { ConductorProcess, Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { startTestServices } from '../support/test-services.js';

/**
 * Three real conductor processes on one database, with this test process
 * playing the API through the JSON-RPC client. Tests run in order: the
 * later ones kill conductors.
 */

const NODE_COUNT = 300;
const HEARTBEAT_TIMEOUT = 3;

let database: TestDatabase;
let stores: Stores;
let stack: Services;
let client: JsonRpcConductorClient;
let nodes: NodeRecord[];
/** One agent for every node (the nodes carry no token): it offers write_image and takes it at once. */
let agent: AgentDouble;
/** Registered hostname -> conductor id. */
const idOf = new Map<string, number>();

async function reload(node: NodeRecord): Promise<NodeRecord> {
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

type NodeState = Pick<
  NodeRecord,
  'id' | 'provisionState' | 'reservation' | 'conductorAffinity' | 'driverInternalInfo' | 'deployStep'
>;

/** The state of the nodes now, in the given order, in one query (it is polled: keep the database load low). */
async function reloadAll(list: readonly NodeRecord[]): Promise<NodeState[]> {
  const rows = await database
    .db('nodes')
    .select('id', 'provision_state', 'reservation', 'conductor_affinity', 'driver_internal_info', 'deploy_step')
    .whereIn(
      'id',
      list.map((n) => n.id),
    );
  const byId = new Map<number, NodeState>(
    rows.map((row: Record<string, unknown>) => [
      row.id as number,
      {
        id: row.id as number,
        provisionState: row.provision_state as string,
        reservation: row.reservation as string | null,
        conductorAffinity: row.conductor_affinity as number | null,
        driverInternalInfo: row.driver_internal_info as Record<string, unknown>,
        deployStep: row.deploy_step as Record<string, unknown>,
      },
    ]),
  );
  return list.map((n) => byId.get(n.id) as NodeState);
}

async function insertNodes(count: number, fields: Partial<NodeRecord>): Promise<NodeRecord[]> {
  const rows = Array.from({ length: count }, () => ({
    uuid: randomUUID(),
    driver: 'fake-hardware',
    boot_interface: 'fake',
    deploy_interface: fields.deployInterface ?? 'direct',
    power_interface: 'fake',
    management_interface: 'fake',
    provision_state: fields.provisionState ?? 'available',
    instance_info: JSON.stringify(UNFETCHED_INSTANCE_INFO),
  }));
  const inserted = await database.db('nodes').insert(rows).returning('id');
  return Promise.all(inserted.map((row: { id: number }) => stores.nodes.getById(row.id) as Promise<NodeRecord>));
}

/** Node uuids each conductor logged accepting an action for. */
function acceptedBy(conductor: ConductorProcess, action: string): Set<string> {
  return new Set(
    conductor.process.lines
      .filter((l) => l.message === 'provision action accepted' && l.action === action)
      .map((l) => l.nodeUuid as string),
  );
}

function describeStates(list: NodeState[]): string {
  const counts = new Map<string, number>();
  for (const n of list) counts.set(n.provisionState, (counts.get(n.provisionState) ?? 0) + 1);
  return JSON.stringify(Object.fromEntries(counts));
}

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  agent = await AgentDouble.start('');
  agent.behaviours.set('deploy.get_deploy_steps', {
    kind: 'sync',
    result: { deploy_steps: { Generic: [{ interface: 'deploy', step: 'write_image', priority: 0 }] } },
  });
  agent.behaviours.set('deploy.execute_deploy_step', { kind: 'sync' });
  stack = await startTestServices({
    databaseUrl: database.url,
    conductors: 3,
    api: false,
    env: {
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT),
      BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
      BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
      BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      // the agent below serves plain HTTP on loopback
      BMAAS_AGENT__REQUIRE_TLS: 'false',
    },
  });
  for (const c of await stores.conductors.list(HEARTBEAT_TIMEOUT)) idOf.set(c.hostname, c.id);
  const ring = new ConductorRing({
    conductors: stores.conductors,
    heartbeatTimeout: HEARTBEAT_TIMEOUT,
    resetInterval: 1,
    logger: createSilentLogger(),
  });
  client = new JsonRpcConductorClient({
    ring,
    config: { port: 8089, timeout: 10, use_ssl: false, cafile: null, username: null, password: null },
    logger: createSilentLogger(),
    metrics: new RpcCallMetrics(new Registry(), 'client'),
  });
});

afterAll(async () => {
  await agent?.stop();
  await client?.close();
  await stack?.stop();
  await database?.drop();
});

describe('three conductors', () => {
  it('spread 300 nodes evenly, and each node is deployed by the conductor that owns it', async () => {
    expect(idOf.size).toBe(3);
    nodes = await insertNodes(NODE_COUNT, { deployInterface: 'direct', provisionState: 'available' });
    const owners = await mapLimit(nodes, 20, async (node, i) => {
      await client.callForNode(
        node,
        'do_provisioning_action',
        { node_id: node.uuid, event: 'deploy' },
        {
          requestId: `req-spread-${i}`,
        },
      );
      return client.hostFor(node);
    });

    const perOwner = new Map<string, number>();
    for (const owner of owners) perOwner.set(owner, (perOwner.get(owner) ?? 0) + 1);
    expect([...perOwner.keys()].sort()).toEqual(stack.conductors.map((c) => c.hostname).sort());
    console.info(`nodes per conductor: ${[...perOwner.values()].join(', ')}`);
    for (const count of perOwner.values())
      expect(Math.abs(count - NODE_COUNT / 3)).toBeLessThanOrEqual(NODE_COUNT * 0.1);

    const waiting = await waitFor(
      'every node in wait call-back',
      async () => {
        const now = await reloadAll(nodes);
        return now.every((n) => n.provisionState === 'wait call-back' && n.reservation === null) ? now : undefined;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 200,
        describe: async () => describeStates(await reloadAll(nodes)),
      },
    );
    // The field: conductor_affinity is the owner's id (it prepared the ramdisk boot).
    waiting.forEach((node, i) => {
      expect(node.conductorAffinity).toBe(idOf.get(owners[i] as string));
    });
    // The logs: each conductor accepted exactly the deployments of the nodes it owns.
    for (const conductor of stack.conductors) {
      const owned = new Set(nodes.filter((_, i) => owners[i] === conductor.hostname).map((n) => n.uuid));
      expect(acceptedBy(conductor, 'deploy')).toEqual(owned);
    }
  });

  it('lets exactly one of concurrent provision actions on one node through', async () => {
    const [enrolled, available] = [
      ...(await insertNodes(1, { deployInterface: 'fake', provisionState: 'enroll' })),
      ...(await insertNodes(1, { deployInterface: 'direct', provisionState: 'available' })),
    ] as [NodeRecord, NodeRecord];
    for (const [node, event] of [
      [enrolled, 'manage'],
      [available, 'deploy'],
    ] as const) {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, () =>
          client.callForNode(node, 'do_provisioning_action', { node_id: node.uuid, event }),
        ),
      );
      const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      for (const o of refused) {
        expect(o.reason instanceof NodeLocked || o.reason instanceof InvalidStateRequested, String(o.reason)).toBe(
          true,
        );
      }
    }
    await waitFor(
      'both nodes to settle',
      async () =>
        (await reload(enrolled)).provisionState === 'manageable' &&
        (await reload(available)).provisionState === 'wait call-back'
          ? true
          : undefined,
      { timeoutMs: 10_000 },
    );
  });

  it('after kill -9 of a conductor, the others take its nodes over and act on them', async () => {
    const victim = stack.conductors[0] as ConductorProcess;
    const victimId = idOf.get(victim.hostname);
    const before = await reloadAll(nodes);
    const orphaned = nodes.filter((_, i) => before[i]?.conductorAffinity === victimId);
    const others = nodes.filter((_, i) => before[i]?.conductorAffinity !== victimId);
    expect(orphaned.length).toBeGreaterThan(50);

    const killedAt = Date.now();
    victim.process.signal('SIGKILL');
    expect((await victim.process.exited).signal).toBe('SIGKILL');

    const survivorIds = new Set(stack.conductors.slice(1).map((c) => idOf.get(c.hostname)));
    await waitFor(
      "the victim's nodes to be taken over",
      async () => {
        const now = await reloadAll(orphaned);
        return now.every((n) => survivorIds.has(n.conductorAffinity ?? -1) && n.reservation === null) ? now : undefined;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 200,
        describe: async () => {
          const now = await reloadAll(orphaned);
          return `${now.filter((n) => n.conductorAffinity === victimId).length} still on the victim`;
        },
      },
    );
    const takeoverSeconds = (Date.now() - killedAt) / 1000;
    expect(takeoverSeconds).toBeGreaterThanOrEqual(HEARTBEAT_TIMEOUT - 1);
    // Consistent hashing: nodes of the survivors stayed where they were.
    expect((await reloadAll(others)).map((n) => n.conductorAffinity)).toEqual(
      before.filter((n) => n.conductorAffinity !== victimId).map((n) => n.conductorAffinity),
    );
    const tookOver = new Set(
      stack.conductors
        .slice(1)
        .flatMap((c) => c.process.lines.filter((l) => l.message === 'took the node over').map((l) => l.nodeUuid)),
    );
    for (const node of orphaned) expect(tookOver.has(node.uuid)).toBe(true);

    // Acting on them: the agent's call-back reaches the new owner, which goes on with the deployment
    // (reads the agent's steps, sends write_image) and waits for it.
    await waitFor(
      'the client ring to forget the dead conductor',
      async () => {
        try {
          await client.callForNode(orphaned[0] as NodeRecord, 'heartbeat', {
            node_id: (orphaned[0] as NodeRecord).uuid,
            callback_url: agent.url,
          });
          return true;
        } catch (error) {
          if (error instanceof TemporaryFailure) return undefined;
          throw error;
        }
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    await mapLimit(orphaned.slice(1), 20, (node) =>
      client.callForNode(
        node,
        'heartbeat',
        { node_id: node.uuid, callback_url: agent.url },
        { requestId: `req-callback-${node.uuid}` },
      ),
    );
    const finished = await waitFor(
      "the victim's nodes to wait for write_image",
      async () => {
        const now = await reloadAll(orphaned);
        return now.every((n) => n.deployStep.step === 'write_image' && n.reservation === null) ? now : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    for (const [i, node] of finished.entries()) {
      expect(node.provisionState).toBe('wait call-back');
      expect(node.driverInternalInfo.agent_url).toBe(agent.url);
      expect(idOf.get(await client.hostFor(orphaned[i] as NodeRecord))).toBe(node.conductorAffinity);
    }
    console.info(`takeover of ${orphaned.length} nodes done ${takeoverSeconds.toFixed(1)} s after kill -9`);
  });

  it('SIGTERM takes a conductor offline at once and it exits 0', async () => {
    const leaving = stack.conductors[1] as ConductorProcess;
    const signalledAt = Date.now();
    leaving.process.signal('SIGTERM');
    // Offline as its own act (online = false), not by its heartbeat running out: no wall-clock bound needed.
    await waitFor(
      'the conductor to mark itself offline',
      async () => ((await stores.conductors.get(leaving.hostname, 3600))?.alive === false ? true : undefined),
      { timeoutMs: 20_000, intervalMs: 20 },
    );
    console.info(`offline ${Date.now() - signalledAt} ms after SIGTERM`);
    expect(await leaving.process.exited).toEqual({ code: 0, signal: null });
    expect(
      await stores.nodes.list({ reservation: leaving.hostname, limit: 10, sortKey: 'id', sortDir: 'asc' }),
    ).toEqual([]);
  });
});
