import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

const DEPLOY_STEP = { interface: 'bios', step: 'apply_configuration', args: { settings: [] }, priority: 150 };
const RUNBOOK_STEP = { interface: 'raid', step: 'delete_configuration', args: {}, order: 1 };

describe.each([
  { path: 'deploy_templates', since: '1.55', step: DEPLOY_STEP, label: 'deploy template', ordering: 'priority' },
  { path: 'runbooks', since: '1.92', step: RUNBOOK_STEP, label: 'runbook', ordering: 'order' },
])('/v1/$path', ({ path, since, step, label, ordering }) => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
  });
  afterAll(async () => {
    await api?.close();
  });
  const create = (body: Record<string, unknown>, version = '1.92') =>
    api.request('POST', `/v1/${path}`, { body, version });
  const req = (method: string, sub: string, body?: unknown) =>
    api.request(method, `/v1/${path}${sub}`, { body, version: '1.92' });

  it('creates, shows by uuid and name, lists, patches and deletes', async () => {
    const created = await create({ name: 'CUSTOM_HYPERTHREADING_ON', steps: [step], extra: { a: 1 } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'CUSTOM_HYPERTHREADING_ON', steps: [step], extra: { a: 1 } });
    const uuid = created.body.uuid;
    expect((await req('GET', '/CUSTOM_HYPERTHREADING_ON')).body.uuid).toBe(uuid);
    const list = await req('GET', '');
    expect(list.body[path]).toEqual([{ uuid, name: 'CUSTOM_HYPERTHREADING_ON', links: expect.any(Array) }]);
    expect((await req('GET', '/detail')).body[path][0].steps).toEqual([step]);

    const patched = await req('PATCH', `/${uuid}`, [
      { op: 'replace', path: '/name', value: 'CUSTOM_HT_OFF' },
      { op: 'replace', path: `/steps/0/${ordering}`, value: '20' },
    ]);
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('CUSTOM_HT_OFF');
    expect(patched.body.steps[0][ordering]).toBe(20);
    expect((await req('DELETE', '/CUSTOM_HT_OFF')).status).toBe(204);
    expect((await req('GET', `/${uuid}`)).status).toBe(404);
  });

  it('validates names and steps as Ironic', async () => {
    const lower = await create({ name: 'custom_x', steps: [step] });
    expect(lower.status).toBe(400);
    expect(faultString(lower)).toContain('Schema error');
    expect((await create({ name: 'CUSTOM_X', steps: [] })).status).toBe(400);
    expect((await create({ name: 'CUSTOM_X', steps: [{ ...step, interface: 'console' }] })).status).toBe(400);
    expect((await create({ name: 'CUSTOM_X', steps: [{ ...step, [ordering]: -1 }] })).status).toBe(400);
    expect((await create({ name: 'CUSTOM_X' })).status).toBe(400);
    const duplicateSteps = await create({ name: 'CUSTOM_X', steps: [step, step] });
    expect(duplicateSteps.status).toBe(400);
    expect(faultString(duplicateSteps)).toContain(`Duplicates: interface: ${step.interface}, step: ${step.step}`);
    await create({ name: 'CUSTOM_TAKEN', steps: [step] });
    const taken = await create({ name: 'CUSTOM_TAKEN', steps: [step] });
    expect(taken.status).toBe(409);
    expect(faultString(taken)).toBe(`A ${label} with name CUSTOM_TAKEN already exists.`);
    expect((await req('GET', '/bad%20name')).status).toBe(400);
    expect((await req('GET', '?sort_key=steps')).status).toBe(400);
  });

  it('masks secrets in step arguments', async () => {
    const secret = { ...step, step: 'with_secret', args: { password: 'hunter2', user: 'x' } };
    const created = await create({ name: 'CUSTOM_SECRET', steps: [secret] });
    expect(created.body.steps[0].args).toEqual({ password: '******', user: 'x' });
  });

  it(`answers 404 below ${since}`, async () => {
    const minor = Number(since.split('.')[1]);
    expect((await api.request('GET', `/v1/${path}`, { version: `1.${minor - 1}` })).status).toBe(404);
    expect((await create({ name: 'CUSTOM_OLD', steps: [step] }, `1.${minor - 1}`)).status).toBe(404);
    expect((await api.request('GET', `/v1/${path}`, { version: since })).status).toBe(200);
  });
});
