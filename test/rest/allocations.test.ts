import { ApiClient, type NodeAnswer } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENT_HEARTBEATS, startTestServices } from '../support/test-services.js';

/**
 * Allocations as upstream Ironic processes them, with real processes: the
 * API answers `allocating`, a conductor process chooses the node afterwards
 * (resource class, traits, owner), and an allocation a dead conductor left
 * in `allocating` is adopted by the periodic check (every second here).
 */

type Json = Record<string, unknown>;
let database: TestDatabase;
let stores: Stores;
let stack: Services;
let rest: ApiClient;

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  stack = await startTestServices({
    databaseUrl: database.url,
    conductors: 2,
    api: true,
    startTimeoutMs: 60_000,
    env: { ...PATIENT_HEARTBEATS, BMAAS_CONDUCTOR__CHECK_ALLOCATIONS_INTERVAL: '1' },
  });
  rest = new ApiClient(stack.apiUrl as string, { version: '1.60' });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await database?.drop();
});

/** A fake-hardware node taken to `available` with a known power state, as an allocation needs. */
async function availableNode(name: string, fields: Json = {}, traits: string[] = []): Promise<NodeAnswer> {
  const node = await rest.createNode({ driver: 'fake-hardware', name, resource_class: 'rest', ...fields });
  if (traits.length > 0) await rest.expect(204, 'PUT', `/v1/nodes/${node.uuid}/traits`, { traits });
  await rest.provisionAndWait(node.uuid, 'manage', 'manageable', 30_000);
  await rest.provisionAndWait(node.uuid, 'provide', 'available', 30_000);
  await rest.power(node.uuid, 'power off');
  return rest.waitForPowerState(node.uuid, 'power off', 30_000);
}

/** The allocation once it left `allocating`, polled as `baremetal allocation create --wait` does. */
function settled(uuid: string): Promise<Json> {
  return waitFor(
    `allocation ${uuid} active or error`,
    async () => {
      const allocation = (await rest.request('GET', `/v1/allocations/${uuid}`)).body as Json;
      return allocation.state === 'allocating' ? undefined : allocation;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

describe('allocations through the API and conductor processes', { timeout: 120_000 }, () => {
  it('answers allocating; a conductor then takes a node of the class, with the traits and of the owner', async () => {
    const plain = await availableNode('rest-plain');
    const gold = await availableNode('rest-gold', {}, ['CUSTOM_GOLD']);
    const owned = await availableNode('rest-owned', { owner: 'project-a' });

    const byTraits = await rest.expect<Json>(201, 'POST', '/v1/allocations', {
      resource_class: 'rest',
      traits: ['CUSTOM_GOLD'],
    });
    expect(byTraits.body).toMatchObject({ state: 'allocating', node_uuid: null, last_error: null });
    expect(await settled(byTraits.body.uuid as string)).toMatchObject({ state: 'active', node_uuid: gold.uuid });

    const byOwner = await rest.expect<Json>(201, 'POST', '/v1/allocations', {
      resource_class: 'rest',
      owner: 'project-a',
    });
    expect(byOwner.body.state).toBe('allocating');
    expect(await settled(byOwner.body.uuid as string)).toMatchObject({ state: 'active', node_uuid: owned.uuid });
    const node = await rest.node(owned.uuid);
    expect(node).toMatchObject({ instance_uuid: byOwner.body.uuid, allocation_uuid: byOwner.body.uuid });

    // Processed by an alive conductor, recorded as the allocation's.
    const alive = (await stores.conductors.listAlive(60)).map((c) => c.id);
    const row = await stores.allocations.getByUuid(byOwner.body.uuid as string);
    expect(alive).toContain(row?.conductorAffinity);

    const none = await rest.expect<Json>(201, 'POST', '/v1/allocations', {
      resource_class: 'rest',
      traits: ['CUSTOM_GOLD'],
    });
    expect(await settled(none.body.uuid as string)).toMatchObject({
      state: 'error',
      node_uuid: null,
      last_error: `Failed to process allocation ${none.body.uuid}: no suitable nodes have the requested traits CUSTOM_GOLD.`,
    });
    const last = await rest.expect<Json>(201, 'POST', '/v1/allocations', { resource_class: 'rest' });
    expect(await settled(last.body.uuid as string)).toMatchObject({ state: 'active', node_uuid: plain.uuid });
  });

  it('adopts an allocation a dead conductor left in allocating', async () => {
    const node = await availableNode('rest-orphan', { resource_class: 'orphan' });
    await stores.conductors.register({ hostname: 'dead-conductor', conductorGroup: '', drivers: [], interfaces: [] });
    await stores.conductors.markOffline('dead-conductor');
    const dead = (await stores.conductors.get('dead-conductor', 60))?.id as number;
    const left = await stores.allocations.create({
      uuid: crypto.randomUUID(),
      resourceClass: 'orphan',
      traits: [],
      candidateNodes: [],
      extra: {},
      state: 'allocating',
      conductorAffinity: dead,
    });
    expect(await settled(left.uuid)).toMatchObject({ state: 'active', node_uuid: node.uuid });
    const adopted = await stores.allocations.getByUuid(left.uuid);
    expect((await stores.conductors.listAlive(60)).map((c) => c.id)).toContain(adopted?.conductorAffinity);
  });
});
