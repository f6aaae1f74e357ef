import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

describe('/v1/volume', () => {
  let api: ApiHarness;
  let node: string;
  let other: string;
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    node = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'vol-1' } })).body.uuid;
    other = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'vol-2' } })).body.uuid;
  });
  afterAll(async () => {
    await api?.close();
  });

  it('links the connectors and targets from 1.32', async () => {
    const root = await api.request('GET', '/v1/volume');
    expect(root.body.connectors[0].href).toBe(`${api.baseUrl}/v1/volume/connectors`);
    expect(root.body.targets[0].href).toBe(`${api.baseUrl}/v1/volume/targets`);
    expect((await api.request('GET', '/v1/volume', { version: '1.31' })).status).toBe(404);
  });

  it('connectors: create, show, list, patch, delete', async () => {
    const created = await api.request('POST', '/v1/volume/connectors', {
      body: { node_uuid: node, type: 'iqn', connector_id: 'iqn.2017-07.org.example:01' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ node_uuid: node, type: 'iqn', connector_id: 'iqn.2017-07.org.example:01' });
    const uuid = created.body.uuid;
    expect(created.headers.get('location')).toBe(`${api.baseUrl}/v1/volume/connectors/${uuid}`);
    const list = await api.request('GET', '/v1/volume/connectors?node=vol-1');
    expect(list.body.connectors).toEqual([
      { uuid, node_uuid: node, type: 'iqn', connector_id: 'iqn.2017-07.org.example:01', links: expect.any(Array) },
    ]);
    expect((await api.request('GET', `/v1/volume/connectors?node=${other}`)).body.connectors).toEqual([]);
    const ofNode = await api.request('GET', '/v1/nodes/vol-1/volume/connectors');
    expect(ofNode.body.connectors.map((c: { uuid: string }) => c.uuid)).toEqual([uuid]);
    expect((await api.request('GET', '/v1/nodes/vol-2/volume/connectors/detail')).body.connectors).toEqual([]);
    const links = await api.request('GET', '/v1/nodes/vol-1/volume');
    expect(links.body.targets[0].href).toBe(`${api.baseUrl}/v1/nodes/${node}/volume/targets`);
    expect((await api.request('GET', '/v1/nodes/vol-1/volume/targets', { version: '1.31' })).status).toBe(404);
    const patched = await api.request('PATCH', `/v1/volume/connectors/${uuid}`, {
      body: [
        { op: 'replace', path: '/type', value: 'ip' },
        { op: 'replace', path: '/connector_id', value: '192.0.2.10' },
      ],
    });
    expect(patched.body).toMatchObject({ type: 'ip', connector_id: '192.0.2.10' });
    expect((await api.request('DELETE', `/v1/volume/connectors/${uuid}`)).status).toBe(204);
    expect(faultString(await api.request('GET', `/v1/volume/connectors/${uuid}`))).toBe(
      `Volume connector ${uuid} could not be found.`,
    );
  });

  it('connectors: bad input, duplicates, a powered-on node', async () => {
    const body = { node_uuid: node, type: 'wwpn', connector_id: '51:00:00:00:00:00:00:01' };
    expect((await api.request('POST', '/v1/volume/connectors', { body })).status).toBe(201);
    const duplicate = await api.request('POST', '/v1/volume/connectors', { body: { ...body, node_uuid: other } });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toBe(
      'A volume connector with type wwpn and connector ID 51:00:00:00:00:00:00:01 already exists.',
    );
    const badType = await api.request('POST', '/v1/volume/connectors', { body: { ...body, type: 'floppy' } });
    expect(badType.status).toBe(400);
    const badUuid = await api.request('POST', '/v1/volume/connectors', { body: { ...body, uuid: 'x' } });
    expect(badUuid.status).toBe(400);
    expect(faultString(badUuid)).toBe('Expected UUID for uuid: x');
    const badNode = await api.request('POST', '/v1/volume/connectors', { body: { ...body, node_uuid: 'vol-1' } });
    expect(faultString(badNode)).toBe('Expected UUID for node_uuid: vol-1');
    expect(faultString(await api.request('GET', '/v1/volume/connectors/x'))).toBe('Expected UUID for uuid: x');
    await api.database.db('nodes').where({ uuid: other }).update({ power_state: 'power on' });
    const poweredOn = await api.request('POST', '/v1/volume/connectors', {
      body: { node_uuid: other, type: 'mac', connector_id: '52:54:00:00:00:09' },
    });
    expect(poweredOn.status).toBe(400);
    expect(faultString(poweredOn)).toContain('power state "power on"');
    await api.database.db('nodes').where({ uuid: other }).update({ power_state: null });
  });

  it('targets: create, show, list, patch, delete, one boot index per node', async () => {
    const body = {
      node_uuid: node,
      volume_type: 'iscsi',
      volume_id: 'vol-0001',
      boot_index: 0,
      properties: { lun: 1 },
    };
    const created = await api.request('POST', '/v1/volume/targets', { body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...body });
    const uuid = created.body.uuid;
    const list = await api.request('GET', '/v1/volume/targets');
    expect(list.body.targets).toEqual([
      { uuid, node_uuid: node, volume_type: 'iscsi', boot_index: 0, volume_id: 'vol-0001', links: expect.any(Array) },
    ]);
    const duplicate = await api.request('POST', '/v1/volume/targets', { body: { ...body, volume_id: 'vol-0002' } });
    expect(duplicate.status).toBe(409);
    expect(faultString(duplicate)).toBe("A volume target with boot index '0' for the same node already exists.");
    expect((await api.request('POST', '/v1/volume/targets', { body: { ...body, boot_index: -1 } })).status).toBe(400);
    expect((await api.request('POST', '/v1/volume/targets', { body: { ...body, boot_index: 'x' } })).status).toBe(400);
    const patched = await api.request('PATCH', `/v1/volume/targets/${uuid}`, {
      body: [
        { op: 'replace', path: '/node_uuid', value: other },
        { op: 'remove', path: '/properties' },
      ],
    });
    expect(patched.body).toMatchObject({ node_uuid: other, properties: {} });
    expect((await api.request('GET', `/v1/volume/targets/detail?node=vol-2`)).body.targets[0].uuid).toBe(uuid);
    expect((await api.request('DELETE', `/v1/volume/targets/${uuid}`)).status).toBe(204);
  });

  it('answers 404 below 1.32 and 405 for other methods', async () => {
    expect((await api.request('GET', '/v1/volume/connectors', { version: '1.31' })).status).toBe(404);
    expect((await api.request('GET', '/v1/volume/targets', { version: '1.31' })).status).toBe(404);
    expect((await api.request('PUT', '/v1/volume/targets')).status).toBe(405);
  });
});
