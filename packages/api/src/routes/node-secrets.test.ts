import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';

/** Every answer that carries a node: none may show its BMC password, agent token or instance secrets. */
describe('secrets in node answers', () => {
  const password = 'Bmc-Passw0rd';
  let api: ApiHarness;
  const seen: unknown[] = [];
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('are "******" in create, show, list, fields and patch answers', async () => {
    const created = await api.request('POST', '/v1/nodes', {
      body: {
        driver: 'fake-hardware',
        name: 'sec',
        driver_info: { ipmi_address: '192.0.2.9', ipmi_username: 'admin', ipmi_password: password },
        instance_info: { image_source: 'http://img/x', configdrive: 'ZGF0YQ==' },
      },
    });
    expect(created.status).toBe(201);
    const uuid = created.body.uuid as string;
    const node = (await api.stores.nodes.getByUuid(uuid))!;
    await api.stores.nodes.update(node.id, {
      driverInternalInfo: { agent_secret_token: 'tok-123', agent_url: 'http://192.0.2.9:9999' },
    });
    seen.push(created.body);
    seen.push((await api.request('GET', `/v1/nodes/${uuid}`)).body);
    seen.push((await api.request('GET', '/v1/nodes/detail')).body);
    seen.push((await api.request('GET', `/v1/nodes?fields=driver_info,instance_info,driver_internal_info`)).body);
    seen.push((await api.request('GET', `/v1/nodes/sec?fields=driver_info`)).body);
    const patched = await api.request('PATCH', `/v1/nodes/${uuid}`, {
      body: [{ op: 'add', path: '/driver_info/ipmi_port', value: 6230 }],
    });
    expect(patched.status).toBe(200);
    seen.push(patched.body);
    for (const body of seen) {
      const text = JSON.stringify(body);
      expect(text).not.toContain(password);
      expect(text).not.toContain('tok-123');
      expect(text).not.toContain('ZGF0YQ==');
    }
    expect(patched.body.driver_info).toEqual({
      ipmi_address: '192.0.2.9',
      ipmi_username: 'admin',
      ipmi_password: '******',
      ipmi_port: 6230,
    });
    expect(patched.body.driver_internal_info.agent_secret_token).toBe('******');
  });
});
