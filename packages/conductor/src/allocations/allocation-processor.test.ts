import { type AllocationRecord, createSilentLogger, type NodeRecord } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AllocationProcessor } from './allocation-processor.js';

let database: TestDatabase;
let stores: Stores;
let self: number;
let other: number;

function processorOf(conductorId: number, attempts = 1): AllocationProcessor {
  return new AllocationProcessor({
    stores,
    conductorId: () => conductorId,
    lockRetry: { attempts, intervalSeconds: 0.05 },
    heartbeatTimeoutSeconds: 60,
    logger: createSilentLogger(),
  });
}

async function register(hostname: string): Promise<number> {
  return (
    await stores.conductors.register({ hostname, conductorGroup: '', drivers: ['fake-hardware'], interfaces: [] })
  ).id;
}

/** An allocation as the API stores it before create_allocation. */
async function newAllocation(fields: Partial<AllocationRecord> = {}): Promise<AllocationRecord> {
  return stores.allocations.create({
    uuid: crypto.randomUUID(),
    resourceClass: 'rc',
    traits: [],
    candidateNodes: [],
    extra: {},
    state: 'allocating',
    ...fields,
  });
}

async function availableNode(name: string, fields: Partial<NodeRecord> = {}): Promise<NodeRecord> {
  return createNode(
    stores,
    { name, resourceClass: 'rc' },
    { provisionState: 'available', powerState: 'power off', ...fields },
  );
}

async function stored(allocation: AllocationRecord): Promise<AllocationRecord> {
  return (await stores.allocations.getById(allocation.id)) as AllocationRecord;
}

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  self = await register('c-self');
  other = await register('c-other');
});
afterAll(async () => {
  await database?.drop();
});
beforeEach(async () => {
  await database.db('allocations').delete();
  await database.db('nodes').delete();
});

describe('AllocationProcessor', () => {
  it('takes a new allocation, answers, then claims a node in the background: active, the node taken', async () => {
    const node = await availableNode('n-1');
    const processor = processorOf(self);
    const allocation = await newAllocation();
    await processor.take(allocation.uuid);
    expect((await stored(allocation)).conductorAffinity).toBe(self);
    await processor.drain();
    expect(await stored(allocation)).toMatchObject({ state: 'active', nodeId: node.id, lastError: null });
    expect(await stores.nodes.getById(node.id)).toMatchObject({
      instanceUuid: allocation.uuid,
      allocationUuid: allocation.uuid,
    });
    // Taken once only: a second create_allocation for it is refused.
    await expect(processor.take(allocation.uuid)).rejects.toThrow(`Allocation ${allocation.uuid} could not be found.`);
  });

  it("fails with Ironic's last_error when no node fits the resource class, the candidates, the traits or the owner", async () => {
    const processor = processorOf(self);
    const node = await availableNode('n-1', { owner: 'project-a' });
    await stores.nodeTraits.replace(node.id, ['CUSTOM_A']);
    const cases: Array<[Partial<AllocationRecord>, string]> = [
      [{ resourceClass: 'other' }, 'no available nodes match the resource class other'],
      [
        { candidateNodes: [crypto.randomUUID()] },
        'none of the requested nodes are available and match the resource class rc',
      ],
      [{ traits: ['CUSTOM_A', 'CUSTOM_B'] }, 'no suitable nodes have the requested traits CUSTOM_A, CUSTOM_B'],
      [{ owner: 'project-b' }, 'no available nodes match the resource class rc'],
    ];
    for (const [fields, error] of cases) {
      const allocation = await newAllocation(fields);
      await processor.take(allocation.uuid);
      await processor.drain();
      expect(await stored(allocation)).toMatchObject({
        state: 'error',
        nodeId: null,
        lastError: `Failed to process allocation ${allocation.uuid}: ${error}.`,
      });
    }
    // The owner's own node, or one it leases, with the traits asked for.
    const owned = await newAllocation({ owner: 'project-a', traits: ['CUSTOM_A'] });
    await processor.take(owned.uuid);
    await processor.drain();
    expect(await stored(owned)).toMatchObject({ state: 'active', nodeId: node.id });
    const leased = await availableNode('n-2', { lessee: 'project-c' });
    const byLessee = await newAllocation({ owner: 'project-c' });
    await processor.take(byLessee.uuid);
    await processor.drain();
    expect(await stored(byLessee)).toMatchObject({ state: 'active', nodeId: leased.id });
  });

  it('prefers the node named like the allocation, and gives one node to one of many allocations', async () => {
    const processor = processorOf(self);
    const nodes = await Promise.all(['a', 'b', 'c'].map((name) => availableNode(name)));
    const named = await newAllocation({ name: 'b' });
    await processor.take(named.uuid);
    await processor.drain();
    expect((await stored(named)).nodeId).toBe(nodes[1]?.id);

    const racing = await Promise.all(Array.from({ length: 5 }, () => newAllocation()));
    await Promise.all(racing.map((a) => processor.take(a.uuid)));
    await processor.drain();
    const outcomes = await Promise.all(racing.map(stored));
    const active = outcomes.filter((a) => a.state === 'active');
    expect(active.map((a) => a.nodeId).sort()).toEqual([nodes[0]?.id, nodes[2]?.id].sort());
    expect(outcomes.filter((a) => a.state === 'error')).toHaveLength(3);
  });

  it('retries a locked candidate as Ironic does, then names the nodes it could not reserve', async () => {
    const node = await availableNode('locked', { reservation: 'someone' });
    const gaveUp = await newAllocation();
    const processor = processorOf(self, 3);
    await processor.take(gaveUp.uuid);
    await processor.drain();
    expect((await stored(gaveUp)).lastError).toBe(
      `Failed to process allocation ${gaveUp.uuid}: could not reserve any of 1 suitable nodes.`,
    );

    const waited = await newAllocation();
    // Patient enough (50 passes, 2.5 s) for the release below on a busy machine.
    const patient = processorOf(self, 50);
    await patient.take(waited.uuid);
    // The lock goes during the retries: the allocation gets the node.
    await stores.nodes.update(node.id, { reservation: null });
    await patient.drain();
    expect(await stored(waited)).toMatchObject({ lastError: null, state: 'active', nodeId: node.id });
  });

  it('resumes its own allocations at start and adopts those of a dead conductor, each once', async () => {
    const node = await availableNode('n-1');
    const second = await availableNode('n-2');
    const mine = await newAllocation({ conductorAffinity: self, name: 'n-1' });
    const orphan = await newAllocation({ conductorAffinity: other, name: 'n-2' });
    const processor = processorOf(self);
    // The other conductor is alive: its allocation is left alone.
    expect(await processor.adoptOrphans()).toBe(0);
    expect(await processor.resume()).toBe(1);
    await processor.drain();
    expect(await stored(mine)).toMatchObject({ state: 'active', nodeId: node.id });
    expect((await stored(orphan)).state).toBe('allocating');

    await stores.conductors.markOffline('c-other');
    const rival = processorOf(self);
    const [first, again] = await Promise.all([processor.adoptOrphans(), rival.adoptOrphans()]);
    expect(first + again).toBe(1);
    await Promise.all([processor.drain(), rival.drain()]);
    expect(await stored(orphan)).toMatchObject({ state: 'active', nodeId: second.id, conductorAffinity: self });
  });

  it('adopts an allocation no conductor took once it is older than the heartbeat timeout', async () => {
    const node = await availableNode('n-1');
    const untaken = await newAllocation();
    const processor = processorOf(self);
    // Young: the API is handing it over right now.
    expect(await processor.adoptOrphans()).toBe(0);
    await database
      .db('allocations')
      .where({ id: untaken.id })
      .update({ created_at: database.db.raw("now() - interval '2 minutes'") });
    expect(await processor.adoptOrphans()).toBe(1);
    await processor.drain();
    expect(await stored(untaken)).toMatchObject({ state: 'active', nodeId: node.id, conductorAffinity: self });
  });

  it('leaves an allocation deleted or adopted meanwhile as it is', async () => {
    await availableNode('n-1');
    const adopted = await newAllocation({ conductorAffinity: other });
    await processorOf(self).process(adopted);
    expect(await stored(adopted)).toMatchObject({ state: 'allocating', nodeId: null, conductorAffinity: other });
    expect(await database.db('nodes').whereNotNull('instance_uuid')).toEqual([]);
  });
});
