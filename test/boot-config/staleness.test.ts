import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { freePort, mapLimit, waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipxeNodeWaitingCallBack } from '../support/instance-image.js';
import { comparable, type RawAnswer, rawGet } from '../support/raw-http.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The boot path's staleness bound (docs/architecture.md, "The boot path's
 * read path"): two APIs and three conductors on one database serve nodes in
 * "wait call-back" from memory; once a node leaves that state, whether by a
 * REST provision action or by a write straight into PostgreSQL that no API
 * saw, every API must refuse it within 5 × [database]boot_path_poll_interval
 * + 1 s of the commit (plus the one poll in flight then). Each node is asked
 * for on every API, over and over, from the move until well past the bound.
 */

/** [database]boot_path_poll_interval, the default, given explicitly: the bound is computed from it. */
const POLL_INTERVAL_S = 0.2;
/**
 * After this, an API no longer trusts a MAC index whose last read of the change log
 * came before the change (BootPathChangeFeed.following); a read that did see it
 * refreshed the index earlier. The allowance is the poll in flight at the commit,
 * whose read completes after it without having seen it: a query or two, given a
 * second for a machine busy with other suites.
 */
const POLL_IN_FLIGHT_ALLOWANCE_MS = 1000;
const BOUND_MS = 5 * POLL_INTERVAL_S * 1000 + 1000 + POLL_IN_FLIGHT_ALLOWANCE_MS;
/** How long each node is still asked for after the bound. */
const WATCHED_AFTER_BOUND_MS = 1500;
const NODES_PER_MOVE = 3;

interface BootNode {
  uuid: string;
  macHyphens: string;
  mac: string;
}

/** How a node stops being servable; resolves with a time (performance.now()) by which the change had committed. */
type Move = (node: BootNode) => Promise<number>;

let database: TestDatabase;
const stacks: Services[] = [];
let apiUrls: string[] = [];
let rest: ApiClient;
let workDir: string;
/** The uniform refusal: what an unknown MAC gets. */
let refusal: RawAnswer;
let nodes: BootNode[] = [];

function bootPath(node: BootNode): string {
  return `/v1/boot/${node.macHyphens}/boot.ipxe`;
}

/**
 * The REST action `target`. The node's state leaves `waiting` in the action's first write,
 * which the conductor commits before it accepts: the 202's arrival is then the time; were it
 * written later, the first `GET` that shows it.
 */
function restAction(target: string, waiting: string): Move {
  return async (node) => {
    const answer = await rest.provision(node.uuid, target);
    const accepted = performance.now();
    if (answer.status !== 202) throw new Error(`${target} of ${node.uuid} answered ${answer.status}: ${answer.text}`);
    let first = true;
    return waitFor(
      `node ${node.uuid} out of "${waiting}"`,
      async () => {
        const left = (await rest.node(node.uuid)).provision_state !== waiting;
        const seen = first ? accepted : performance.now();
        first = false;
        return left ? seen : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 20 },
    );
  };
}

/**
 * A node deployed to "wait call-back" and torn down again, then manually cleaned with a step
 * of the agent's: it waits in "clean wait" with its ramdisk script rendered.
 */
async function nodeWaitingClean(node: BootNode): Promise<void> {
  for (const [target, state, extra] of [
    ['deleted', 'available', {}],
    ['manage', 'manageable', {}],
    ['clean', 'clean wait', { clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }] }],
  ] as const) {
    const answer = await rest.provision(node.uuid, target, extra);
    if (answer.status !== 202) throw new Error(`${target} of ${node.uuid} answered ${answer.status}: ${answer.text}`);
    await rest.settled(node.uuid, state);
  }
}

/**
 * Asks every API for `node`'s script until the bound after `move` committed plus
 * WATCHED_AFTER_BOUND_MS; every answer to a request sent after the bound must be
 * the uniform refusal. Returns how long after the commit the last 200 was sent
 * (undefined: none), for the figures.
 */
async function watchLeaving(node: BootNode, move: Move): Promise<number | undefined> {
  for (const api of apiUrls) {
    const before = await rawGet(api, bootPath(node));
    expect(before.status, `${api} before the move: ${before.body}`).toBe(200);
    expect(before.body).toContain(`# Boot script of node ${node.uuid},`);
  }
  const committed = await move(node);
  const deadline = committed + BOUND_MS;
  let lastServed: number | undefined;
  while (performance.now() < deadline + WATCHED_AFTER_BOUND_MS) {
    for (const api of apiUrls) {
      const sent = performance.now();
      const answer = await rawGet(api, bootPath(node));
      if (answer.status === 200) {
        expect(
          sent,
          `${api} served node ${node.uuid} ${Math.round(sent - committed)} ms after the change committed (bound ${BOUND_MS} ms)`,
        ).toBeLessThan(deadline);
        lastServed = sent - committed;
      } else {
        expect(comparable(answer), `${api}, node ${node.uuid}`).toEqual(comparable(refusal));
      }
    }
  }
  return lastServed;
}

async function leaveAndWatch(label: string, group: BootNode[], move: Move): Promise<void> {
  const lastServed = await Promise.all(group.map((node) => watchLeaving(node, move)));
  const served = lastServed.filter((ms): ms is number => ms !== undefined);
  console.info(
    `[staleness] ${label}: ${served.length} of ${group.length} nodes still served after the commit, the last ${
      served.length ? `${Math.round(Math.max(...served))} ms` : '-'
    } after it (bound ${BOUND_MS} ms)`,
  );
}

beforeAll(async () => {
  database = await createTestDatabase();
  workDir = await mkdtemp(join(tmpdir(), 'bmaas-boot-staleness-'));
  const kernel = join(workDir, 'deploy_kernel');
  const ramdisk = join(workDir, 'deploy_ramdisk');
  await writeFile(kernel, 'test deploy kernel\n');
  await writeFile(ramdisk, 'test deploy ramdisk\n');
  const roots = await Promise.all([0, 1, 2].map((i) => mkdtemp(join(workDir, `http-root-${i}-`))));
  const httpUrls = await Promise.all([0, 1, 2].map(async () => `http://127.0.0.1:${await freePort()}`));
  const apiPorts = [await freePort(), await freePort()];
  apiUrls = apiPorts.map((port) => `http://127.0.0.1:${port}`);
  const env = {
    BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
    BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
    BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
    BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
    BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '30',
    BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
    BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: '127.0.0.1',
    BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
    BMAAS_API__PUBLIC_ENDPOINT: apiUrls[0] as string,
    BMAAS_API__RESTRICT_BOOT_CONFIG: 'true',
    BMAAS_DATABASE__BOOT_PATH_CACHE: 'true',
    BMAAS_DATABASE__BOOT_PATH_POLL_INTERVAL: String(POLL_INTERVAL_S),
  };
  // Two stacks on one database: three conductors and an API, then a second API alone.
  stacks.push(
    await startTestServices({
      databaseUrl: database.url,
      conductors: 3,
      api: true,
      apiPort: apiPorts[0],
      startTimeoutMs: 60_000,
      env,
      conductorEnv: (i) => ({
        BMAAS_DEPLOY__HTTP_ROOT: roots[i] as string,
        BMAAS_DEPLOY__HTTP_URL: httpUrls[i] as string,
      }),
    }),
  );
  stacks.push(
    await startTestServices({
      databaseUrl: database.url,
      conductors: 0,
      api: true,
      apiPort: apiPorts[1],
      startTimeoutMs: 60_000,
      env,
    }),
  );
  rest = new ApiClient(apiUrls[0] as string);
  refusal = await rawGet(apiUrls[0] as string, '/v1/boot/02-00-00-00-00-01/boot.ipxe');
  expect(refusal.status).toBe(404);

  const bootNode = async (i: number): Promise<BootNode> => {
    const mac = `52:54:00:5e:00:${i.toString(16).padStart(2, '0')}`;
    return { ...(await ipxeNodeWaitingCallBack(rest, `stale-${i}`, mac, { kernel, ramdisk })), mac };
  };
  const ownerOf = async (node: BootNode) => (await rest.node(node.uuid)).conductor as string;
  nodes = await mapLimit(
    Array.from({ length: 4 * NODES_PER_MOVE }, (_, i) => i),
    6,
    bootNode,
  );
  // Every conductor owns some of them, so each one's answers are among those watched. The ring
  // places nodes by uuid, so 12 nodes miss a conductor now and then: a node of a missing owner
  // takes the place of one whose owner has several (the replaced node is simply not watched).
  const owners = await Promise.all(nodes.map(ownerOf));
  for (let i = nodes.length; new Set(owners).size < 3 && i < 4 * NODES_PER_MOVE + 40; i++) {
    const node = await bootNode(i);
    const owner = await ownerOf(node);
    const shared = owners.findIndex((o) => owners.filter((other) => other === o).length > 1);
    if (owners.includes(owner) || shared < 0) continue;
    nodes[shared] = node;
    owners[shared] = owner;
  }
  expect(new Set(owners).size).toBe(3);
}, 180_000);

afterAll(async () => {
  for (const stack of stacks.reverse()) await stack.stop();
  await database?.drop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** The nodes of the `index`-th move. */
function group(index: number): BootNode[] {
  return nodes.slice(index * NODES_PER_MOVE, (index + 1) * NODES_PER_MOVE);
}

describe(`a node no longer servable is refused by both APIs within ${BOUND_MS} ms`, () => {
  it('after REST "abort" in "clean wait" (clean failed)', async () => {
    await Promise.all(group(0).map(nodeWaitingClean));
    await leaveAndWatch('abort in clean wait', group(0), restAction('abort', 'clean wait'));
  }, 60_000);

  it('after REST "deleted" in "wait call-back" (torn down to available)', async () => {
    await leaveAndWatch('deleted in wait call-back', group(1), restAction('deleted', 'wait call-back'));
  }, 60_000);

  it('after its provision state is changed in PostgreSQL, past the API and the conductors', async () => {
    await leaveAndWatch('state written in PostgreSQL', group(2), async (node) => {
      await database
        .db('nodes')
        .where({ uuid: node.uuid })
        .update({ provision_state: 'active', target_provision_state: null });
      return performance.now();
    });
  }, 60_000);

  it('after its port (the MAC asked for) is deleted in PostgreSQL, past the API', async () => {
    await leaveAndWatch('port deleted in PostgreSQL', group(3), async (node) => {
      expect(await database.db('ports').where({ address: node.mac }).delete()).toBe(1);
      return performance.now();
    });
  }, 60_000);
});
