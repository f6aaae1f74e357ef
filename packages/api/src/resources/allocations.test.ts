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
  });
  const allocate = (body: Record<string, unknown>, version?: string) =>
    api.request('POST', '/v1/allocations', { body, version });

  it('allocates a node of the resource class: allocating -> active, instance_uuid set on the node', async () => {
    const created = await allocate({ resource_class: 'gpu', name: 'job-1', extra: { who: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'job-1',
      state: 'active',
      node_uuid: nodes['alloc-gpu'],
      resource_class: 'gpu',
      traits: [],
      candidate_nodes: [],
      last_error: null,
      extra: { who: 'ci' },
      owner: null,
    });
    const node = await api.request('GET', '/v1/nodes/alloc-gpu');
    expect(node.body.instance_uuid).toBe(created.body.uuid);
    expect(node.body.allocation_uuid).toBe(created.body.uuid);

    const again = await allocate({ resource_class: 'gpu' });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({
      state: 'error',
      node_uuid: null,
      last_error: `Failed to process allocation ${again.body.uuid}: no available nodes match the resource class gpu.`,
    });

    expect((await api.request('GET', '/v1/allocations/job-1')).body.uuid).toBe(created.body.uuid);
    const list = await api.request('GET', '/v1/allocations?state=active');
    expect(list.body.allocations.map((a: { uuid: string }) => a.uuid)).toEqual([created.body.uuid]);
    expect((await api.request('GET', '/v1/allocations?node=alloc-gpu')).body.allocations).toHaveLength(1);
    expect((await api.request('GET', '/v1/allocations?resource_class=gpu')).body.allocations).toHaveLength(2);
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
    const allocation = await allocate({ resource_class: 'gpu' });
    expect(allocation.body.state).toBe('active');
    const patched = await api.request('PATCH', '/v1/nodes/alloc-gpu', {
      body: [{ op: 'remove', path: '/instance_uuid' }],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ instance_uuid: null, allocation_uuid: null });
    expect((await api.request('GET', `/v1/allocations/${allocation.body.uuid}`)).status).toBe(404);
    expect((await allocate({ resource_class: 'gpu' })).body.state).toBe('active');
  });

  it('never gives one node to two allocations made at once', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => allocate({ resource_class: 'gpu' })));
    const active = answers.filter((a) => a.body.state === 'active');
    expect(active).toHaveLength(1);
    expect(active[0]?.body.node_uuid).toBe(nodes['alloc-gpu']);
    expect(answers.filter((a) => a.body.state === 'error')).toHaveLength(5);
    expect((await api.request('GET', '/v1/nodes/alloc-gpu')).body.instance_uuid).toBe(active[0]?.body.uuid);
  });

  it('chooses among candidate nodes, prefers the node named like the allocation, skips busy nodes', async () => {
    await api.database.db('nodes').where({ name: 'alloc-1' }).update({ maintenance: true });
    const only = await allocate({ resource_class: 'baremetal', candidate_nodes: ['alloc-1'] });
    expect(only.body.state).toBe('error');
    expect(only.body.last_error).toContain('none of the requested nodes are available and match the resource class');
    await api.database.db('nodes').where({ name: 'alloc-1' }).update({ maintenance: false });

    const named = await allocate({ resource_class: 'baremetal', name: 'alloc-2' });
    expect(named.body.node_uuid).toBe(nodes['alloc-2']);
    const other = await allocate({ resource_class: 'baremetal', candidate_nodes: [nodes['alloc-1'], 'alloc-2'] });
    expect(other.body.node_uuid).toBe(nodes['alloc-1']);
    expect(other.body.candidate_nodes).toEqual([nodes['alloc-1'], nodes['alloc-2']]);

    const traits = await allocate({ resource_class: 'gpu', traits: ['CUSTOM_GPU'] });
    expect(traits.body.state).toBe('error');
    expect(traits.body.last_error).toContain('no suitable nodes have the requested traits CUSTOM_GPU');
  });

  it('backfills an allocation for a deployed node (1.58)', async () => {
    await api.database.db('nodes').where({ name: 'alloc-1' }).update({ provision_state: 'active' });
    const backfilled = await allocate({ node: 'alloc-1', name: 'legacy' }, '1.58');
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
    const allocation = await allocate({ resource_class: 'doomed' });
    expect(allocation.body.node_uuid).toBe(doomed);
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
