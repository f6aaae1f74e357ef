import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf, faultString } from '../testing/api-harness.js';

describe('/v1/allocations', () => {
  let api: ApiHarness;
  const nodes: Record<string, string> = {};
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    for (const name of ['alloc-1', 'alloc-2', 'alloc-gpu']) {
      nodes[name] = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name } })).body.uuid;
    }
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('nodes').update({ instance_uuid: null, allocation_uuid: null });
    await api.database.db('allocations').delete();
    // Enrolled, verified and cleaned nodes: what an allocation may take.
    await api.database
      .db('nodes')
      .update({ provision_state: 'available', power_state: 'power off', resource_class: 'baremetal' });
    await api.database.db('nodes').where({ name: 'alloc-gpu' }).update({ resource_class: 'gpu' });
    api.conductors.respondWith('create_allocation', () => null);
  });
  const allocate = (body: Record<string, unknown>, version?: string) =>
    api.request('POST', '/v1/allocations', { body, version });

  /**
   * Makes the conductor (the fake client) process every allocation it is
   * handed by giving it `nodeName`, with the store's compare-and-set as the
   * real one does (packages/conductor's AllocationProcessor chooses the node).
   */
  /** The conductor's background work on the last allocation handed to it. */
  let processing: Promise<unknown> = Promise.resolve();
  const conductorGives = (nodeName: string) =>
    api.conductors.respondWith('create_allocation', async ({ allocation_id }) => {
      const conductorId = (await api.stores.conductors.get('cond-1', 60))?.id as number;
      const allocation = await api.stores.allocations.getByUuid(allocation_id);
      const taken = allocation && (await api.stores.allocations.assign(allocation, conductorId));
      const node = await api.stores.nodes.getByUuid(nodes[nodeName] as string);
      if (!taken || !node) throw new Error('nothing to process');
      // After the answer, as the conductor's background work.
      processing = new Promise((resolve) => setImmediate(resolve)).then(() =>
        api.stores.allocations.claim(taken, node, conductorId),
      );
      return null;
    });
  /** The allocation once the conductor's work on it ended. */
  const settled = async (uuid: string) => {
    await processing;
    return (await api.request('GET', `/v1/allocations/${uuid}`)).body;
  };

  it('answers allocating at once and hands the allocation to a conductor, as Ironic does', async () => {
    api.conductors.calls.length = 0;
    const created = await allocate({ resource_class: 'gpu', name: 'job-1', extra: { who: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'job-1',
      state: 'allocating',
      node_uuid: null,
      resource_class: 'gpu',
      traits: [],
      candidate_nodes: [],
      last_error: null,
      extra: { who: 'ci' },
      owner: null,
    });
    expect(api.conductors.callsOf('create_allocation')).toEqual([
      expect.objectContaining({ host: 'cond-1', params: { allocation_id: created.body.uuid } }),
    ]);
    expect((await api.request('GET', '/v1/allocations/job-1')).body.state).toBe('allocating');
    expect((await api.database.db('allocations').where({ uuid: created.body.uuid }).first()).conductor_affinity).toBe(
      null,
    );
    const candidates = await allocate({ resource_class: 'baremetal', candidate_nodes: [nodes['alloc-1'], 'alloc-2'] });
    expect(candidates.body.candidate_nodes).toEqual([nodes['alloc-1'], nodes['alloc-2']]);
  });

  it('refuses with 503 and keeps nothing when no conductor is alive to process it', async () => {
    await api.stores.conductors.markOffline('cond-1');
    try {
      const refused = await allocate({ resource_class: 'gpu', name: 'orphan' });
      expect(refused.status).toBe(503);
      expect(faultString(refused)).toBe('No alive conductor is registered.');
      expect((await api.request('GET', '/v1/allocations')).body.allocations).toEqual([]);
    } finally {
      await api.registerConductor('cond-1');
    }
  });

  it('shows what the conductor made of it: active with the node, then freed when deleted', async () => {
    conductorGives('alloc-gpu');
    const created = await allocate({ resource_class: 'gpu', name: 'job-1' });
    expect(created.body.state).toBe('allocating');
    expect(await settled(created.body.uuid)).toMatchObject({ state: 'active', node_uuid: nodes['alloc-gpu'] });
    const node = await api.request('GET', '/v1/nodes/alloc-gpu');
    expect(node.body.instance_uuid).toBe(created.body.uuid);
    expect(node.body.allocation_uuid).toBe(created.body.uuid);

    const list = await api.request('GET', '/v1/allocations?state=active');
    expect(list.body.allocations.map((a: { uuid: string }) => a.uuid)).toEqual([created.body.uuid]);
    expect((await api.request('GET', '/v1/allocations?node=alloc-gpu')).body.allocations).toHaveLength(1);
    expect((await api.request('GET', '/v1/allocations?resource_class=gpu')).body.allocations).toHaveLength(1);
    expect((await api.request('GET', '/v1/allocations?fields=uuid,state')).body.allocations[0]).toEqual({
      uuid: expect.any(String),
      state: expect.any(String),
      links: expect.any(Array),
    });

    const ofNode = await api.request('GET', '/v1/nodes/alloc-gpu/allocation?fields=uuid,state');
    expect(ofNode.body).toEqual({ uuid: created.body.uuid, state: 'active', links: expect.any(Array) });
    const none = await api.request('GET', '/v1/nodes/alloc-1/allocation');
    expect(none.status).toBe(404);
    expect(faultOf(none.body).faultstring).toBe('Allocation for node alloc-1 was not found');
    expect((await api.request('GET', '/v1/nodes/alloc-gpu/allocation', { version: '1.51' })).status).toBe(404);
    expect((await api.request('PATCH', '/v1/nodes/alloc-gpu/allocation', { body: [] })).status).toBe(405);

    const patched = await api.request('PATCH', '/v1/allocations/job-1', {
      body: [{ op: 'replace', path: '/name', value: 'job-renamed' }],
    });
    expect(patched.body.name).toBe('job-renamed');

    expect((await api.request('DELETE', '/v1/nodes/alloc-gpu/allocation')).status).toBe(204);
    expect((await api.request('GET', '/v1/allocations/job-renamed')).status).toBe(404);
    const freed = await api.request('GET', '/v1/nodes/alloc-gpu');
    expect(freed.body.instance_uuid).toBeNull();
    expect(freed.body.allocation_uuid).toBeNull();
  });

  it('goes when its node loses its instance (a patch here; undeploy in the conductor writes the same)', async () => {
    conductorGives('alloc-gpu');
    const allocation = await allocate({ resource_class: 'gpu' });
    expect((await settled(allocation.body.uuid)).state).toBe('active');
    const patched = await api.request('PATCH', '/v1/nodes/alloc-gpu', {
      body: [{ op: 'remove', path: '/instance_uuid' }],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ instance_uuid: null, allocation_uuid: null });
    expect((await api.request('GET', `/v1/allocations/${allocation.body.uuid}`)).status).toBe(404);
    const next = await allocate({ resource_class: 'gpu' });
    expect((await settled(next.body.uuid)).state).toBe('active');
  });

  it('backfills an allocation for a deployed node (1.58)', async () => {
    await api.database.db('nodes').where({ name: 'alloc-1' }).update({ provision_state: 'active' });
    await api.request('PUT', '/v1/nodes/alloc-1/traits', { body: { traits: ['CUSTOM_A'] }, version: '1.37' });
    const wrongTraits = await allocate({ node: 'alloc-1', traits: ['CUSTOM_A', 'CUSTOM_B'] }, '1.58');
    expect(wrongTraits.status).toBe(400);
    expect(faultString(wrongTraits)).toContain(
      'List of traits [CUSTOM_A] does not match the requested traits CUSTOM_A,CUSTOM_B',
    );
    const backfilled = await allocate({ node: 'alloc-1', name: 'legacy', traits: ['CUSTOM_A'] }, '1.58');
    expect(backfilled.status).toBe(201);
    expect(backfilled.body).toMatchObject({
      state: 'active',
      node_uuid: nodes['alloc-1'],
      resource_class: 'baremetal',
    });
    expect((await api.request('GET', '/v1/nodes/alloc-1')).body.instance_uuid).toBe(backfilled.body.uuid);

    const notActive = await allocate({ node: 'alloc-2' }, '1.58');
    expect(notActive.status).toBe(400);
    expect(faultString(notActive)).toContain('Node must be in the "active" state');
    expect((await allocate({ node: 'alloc-1' }, '1.57')).status).toBe(406);

    const activeNode = await api.request('DELETE', '/v1/allocations/legacy');
    expect(activeNode.status).toBe(409);
    expect(faultString(activeNode)).toContain('because the node is active (and maintenance mode is off)');
  });

  it('goes with its node when the node is deleted (in maintenance)', async () => {
    const doomed = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'alloc-doomed' } }))
      .body.uuid;
    await api.database
      .db('nodes')
      .where({ uuid: doomed })
      .update({ provision_state: 'available', power_state: 'power off', resource_class: 'doomed' });
    nodes['alloc-doomed'] = doomed;
    conductorGives('alloc-doomed');
    const allocation = await allocate({ resource_class: 'doomed' });
    expect((await settled(allocation.body.uuid)).node_uuid).toBe(doomed);
    expect((await api.request('DELETE', `/v1/nodes/${doomed}`)).status).toBe(409);
    await api.request('PUT', `/v1/nodes/${doomed}/maintenance`, { body: { reason: 'retire' } });
    expect((await api.request('DELETE', `/v1/nodes/${doomed}`)).status).toBe(204);
    expect((await api.request('GET', `/v1/allocations/${allocation.body.uuid}`)).status).toBe(404);
  });

  it('refuses bad input with Ironic texts', async () => {
    expect(faultString(await allocate({}))).toBe('The resource_class field is mandatory when not backfilling');
    expect(faultString(await allocate({ resource_class: 'x', name: 'a b' }))).toBe(
      "Cannot create allocation with invalid name 'a b'",
    );
    // The schema's refusals in the words of Ironic's jsonschema.
    expect(faultString(await allocate({ resource_class: 'x', traits: ['lower'] }))).toBe(
      "Schema error for allocation: 'lower' does not match '^CUSTOM_[A-Z0-9_]+$' (field traits.0)",
    );
    expect(faultString(await allocate({ resource_class: 'r'.repeat(81) }))).toBe(
      `Schema error for allocation: '${'r'.repeat(81)}' is too long (field resource_class)`,
    );
    expect(faultString(await allocate({ resource_class: 'x', extra: [] }))).toBe(
      "Schema error for allocation: [] is not of type 'object', 'null' (field extra)",
    );
    expect(faultString(await allocate({ resource_class: 'x', colour: 'red' }))).toBe(
      "Schema error for allocation: Additional properties are not allowed ('colour' was unexpected)",
    );
    expect((await allocate({ resource_class: 'x', uuid: 'nope' })).status).toBe(400);
    const ghosts = await allocate({ resource_class: 'x', candidate_nodes: ['ghost', 'alloc-1', 'no such'] });
    expect(ghosts.status).toBe(400);
    expect(faultString(ghosts)).toBe('Nodes cannot be found: ghost, no such');
    await allocate({ resource_class: 'x', name: 'same' });
    const duplicate = await allocate({ resource_class: 'x', name: 'same' });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toBe('An allocation with name same already exists.');
    expect(
      (await api.request('PATCH', '/v1/allocations/same', { body: [{ op: 'replace', path: '/traits', value: [] }] }))
        .status,
    ).toBe(400);
    expect((await api.request('GET', '/v1/allocations?state=done')).status).toBe(400);
    expect((await api.request('GET', '/v1/allocations?sort_key=traits')).status).toBe(400);
  });

  it('is gated by microversion: 404 below 1.52, PATCH 405 below 1.57, owner from 1.60', async () => {
    const created = await allocate({ resource_class: 'x', owner: 'project-a' }, '1.60');
    expect(created.body.owner).toBe('project-a');
    expect((await api.request('GET', '/v1/allocations', { version: '1.51' })).status).toBe(404);
    expect((await allocate({ resource_class: 'x' }, '1.51')).status).toBe(404);
    const old = await api.request('GET', `/v1/allocations/${created.body.uuid}`, { version: '1.59' });
    expect(old.body).not.toHaveProperty('owner');
    expect((await allocate({ resource_class: 'x', owner: 'p' }, '1.59')).status).toBe(406);
    const patch = await api.request('PATCH', `/v1/allocations/${created.body.uuid}`, {
      body: [{ op: 'add', path: '/extra/a', value: 1 }],
      version: '1.56',
    });
    expect(patch.status).toBe(405);
    expect((await api.request('GET', '/v1/allocations?owner=p', { version: '1.59' })).status).toBe(406);
  });
});
