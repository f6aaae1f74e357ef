import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

const STEPS = [{ interface: 'bios', step: 'apply_configuration', args: {}, order: 1 }];

/** Runbook names, description and traits of 1.112. */
describe('runbooks from 1.112', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('runbooks').delete();
  });
  const create = (body: Record<string, unknown>, version: string) =>
    api.request('POST', '/v1/runbooks', { body: { steps: STEPS, ...body }, version });

  it('takes a logical name and a description from 1.112; before, a CUSTOM_ trait name and no description', async () => {
    expect((await create({ name: 'firmware-update.v2' }, '1.111')).status).toBe(400);
    expect((await create({ name: 'CUSTOM_FW', description: 'x' }, '1.111')).status).toBe(400);
    const res = await create({ name: 'firmware-update.v2', description: 'BIOS settings for db hosts' }, '1.112');
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      name: 'firmware-update.v2',
      description: 'BIOS settings for db hosts',
      traits: [],
    });
    const older = await api.request('GET', '/v1/runbooks/firmware-update.v2', { version: '1.111' });
    expect(older.body).not.toHaveProperty('description');
    expect(older.body).not.toHaveProperty('traits');
    const long = await create({ name: 'other', description: 'd'.repeat(256) }, '1.112');
    expect(long.status).toBe(400);
    expect(faultString(long)).toContain('description');
    expect((await create({ name: 'not/a name' }, '1.112')).status).toBe(400);
    expect((await create({ name: 'CUSTOM_X', traits: ['CUSTOM_X'] }, '1.112')).status).toBe(400);
    const patched = await api.request('PATCH', '/v1/runbooks/firmware-update.v2', {
      body: [{ op: 'replace', path: '/description', value: 'db hosts' }],
      version: '1.112',
    });
    expect(patched.body.description).toBe('db hosts');
    const patchedOld = await api.request('PATCH', '/v1/runbooks/firmware-update.v2', {
      body: [{ op: 'replace', path: '/description', value: 'y' }],
      version: '1.111',
    });
    expect(patchedOld.status).toBe(400);
  });

  it('/v1/runbooks/{id}/traits: replace, add one, remove one or all; 404 before 1.112', async () => {
    const runbook = (await create({ name: 'rb' }, '1.112')).body;
    const traits = async () => (await api.request('GET', `/v1/runbooks/rb/traits`, { version: '1.112' })).body;
    expect((await api.request('GET', '/v1/runbooks/rb/traits', { version: '1.111' })).status).toBe(404);
    expect(await traits()).toEqual({ traits: [] });
    const put = await api.request('PUT', '/v1/runbooks/rb/traits', {
      body: { traits: ['CUSTOM_DB', 'CUSTOM_BIOS'] },
      version: '1.112',
    });
    expect(put.status).toBe(204);
    expect(await traits()).toEqual({ traits: ['CUSTOM_BIOS', 'CUSTOM_DB'] });
    const one = await api.request('PUT', `/v1/runbooks/${runbook.uuid}/traits/CUSTOM_WEB`, { version: '1.112' });
    expect(one.status).toBe(204);
    expect(one.headers.get('location')).toBe(`${api.baseUrl}/v1/runbooks/${runbook.uuid}/traits/CUSTOM_WEB`);
    expect((await api.request('GET', '/v1/runbooks/rb', { version: '1.112' })).body.traits).toEqual([
      'CUSTOM_BIOS',
      'CUSTOM_DB',
      'CUSTOM_WEB',
    ]);
    const bad = await api.request('PUT', '/v1/runbooks/rb/traits/lower', { version: '1.112' });
    expect(bad.status).toBe(400);
    expect((await api.request('DELETE', '/v1/runbooks/rb/traits/CUSTOM_DB', { version: '1.112' })).status).toBe(204);
    expect((await api.request('DELETE', '/v1/runbooks/rb/traits/CUSTOM_NONE', { version: '1.112' })).status).toBe(204);
    expect((await traits()).traits).toEqual(['CUSTOM_BIOS', 'CUSTOM_WEB']);
    expect((await api.request('DELETE', '/v1/runbooks/rb/traits', { version: '1.112' })).status).toBe(204);
    expect(await traits()).toEqual({ traits: [] });
    expect((await api.request('GET', '/v1/runbooks?fields=name,traits', { version: '1.112' })).body.runbooks).toEqual([
      { name: 'rb', traits: [], links: expect.any(Array) },
    ]);
  });
});
