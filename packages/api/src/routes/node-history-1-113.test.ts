import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';

/** Node history detail fields of 1.113 (project) and 1.115 (state, target, duration). */
describe('node history from 1.113', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    const node = await api.storeNode('active', []);
    await api.stores.nodeHistory.append([
      {
        nodeId: node.id,
        conductor: 'cond-1',
        eventType: 'provisioning',
        severity: 'info',
        event: 'Provision state changed from "deploying" to "active".',
        project: 'p-1',
        state: 'active',
        targetProvisionState: null,
        durationSeconds: 42,
      },
    ]);
    await api.stores.nodes.update(node.id, { name: 'hist' });
  });
  afterAll(async () => {
    await api?.close();
  });
  const detail = async (version: string) =>
    (await api.request('GET', '/v1/nodes/hist/history/detail', { version })).body.history[0];

  it('shows project from 1.113 and state, target_provision_state, duration_seconds from 1.115', async () => {
    expect(await detail('1.112')).not.toHaveProperty('project');
    expect(await detail('1.113')).toMatchObject({ project: 'p-1' });
    const at114 = await detail('1.114');
    expect(at114).not.toHaveProperty('state');
    expect(at114).not.toHaveProperty('duration_seconds');
    expect(await detail('1.115')).toMatchObject({
      project: 'p-1',
      state: 'active',
      target_provision_state: null,
      duration_seconds: 42,
    });
    const short = (await api.request('GET', '/v1/nodes/hist/history', { version: '1.115' })).body.history[0];
    expect(Object.keys(short).sort()).toEqual(['created_at', 'event', 'links', 'severity', 'uuid']);
    const one = await api.request('GET', `/v1/nodes/hist/history/${short.uuid}`, { version: '1.115' });
    expect(one.body).toMatchObject({ project: 'p-1', state: 'active', duration_seconds: 42 });
  });
});
