import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';

const RULE = {
  description: 'QEMU machines are small',
  priority: 20,
  conditions: [{ op: 'eq', args: { values: ['{inventory[system_vendor][manufacturer]}', 'QEMU'] } }],
  actions: [{ op: 'set-attribute', args: { path: 'resource_class', value: 'qemu-small' } }],
};

describe('/v1/inspection_rules (1.96)', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
  });
  afterAll(async () => {
    await api?.close();
  });
  const req = (method: string, path: string, body?: unknown, version = '1.96') =>
    api.request(method, `/v1/inspection_rules${path}`, { body, version });

  it('is not there before 1.96', async () => {
    expect((await req('GET', '', undefined, '1.95')).status).toBe(404);
    expect((await req('POST', '', RULE, '1.95')).status).toBe(404);
  });

  it('creates, lists, shows, patches and deletes a rule', async () => {
    const created = await req('POST', '', RULE);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ ...RULE, phase: 'main', sensitive: false });
    const { uuid } = created.body;
    expect(created.headers.get('location')).toBe(`${api.baseUrl}/v1/inspection_rules/${uuid}`);
    const list = await req('GET', '');
    expect(list.body.inspection_rules).toEqual([
      { uuid, priority: 20, phase: 'main', description: RULE.description, links: expect.any(Array) },
    ]);
    expect((await req('GET', '?phase=main&detail=true')).body.inspection_rules[0].actions).toEqual(RULE.actions);
    expect((await req('GET', '?phase=other')).body.inspection_rules).toEqual([]);
    const patched = await req('PATCH', `/${uuid}`, [{ op: 'replace', path: '/priority', value: 30 }]);
    expect(patched.body.priority).toBe(30);
    expect((await req('DELETE', `/${uuid}`)).status).toBe(204);
    const gone = await req('GET', `/${uuid}`);
    expect(gone.status).toBe(404);
    expect(faultString(gone)).toBe(`Inspection rule ${uuid} could not be found.`);
  });

  it('hides the conditions and actions of a sensitive rule, which stays sensitive', async () => {
    const created = await req('POST', '', { ...RULE, sensitive: true });
    expect(created.body).toMatchObject({ sensitive: true, conditions: null, actions: null });
    const shown = await req('GET', `/${created.body.uuid}`);
    expect(shown.body).toMatchObject({ conditions: null, actions: null });
    const unset = await req('PATCH', `/${created.body.uuid}`, [{ op: 'replace', path: '/sensitive', value: false }]);
    expect(unset.status).toBe(400);
    expect(faultString(unset)).toBe('Inspection rules cannot have the sensitive flag unset.');
    await req('DELETE', `/${created.body.uuid}`);
  });

  it.each([
    [{ ...RULE, actions: [] }, 'actions'],
    [{ ...RULE, actions: [{ op: 'api-call', args: { url: 'http://x' } }] }, 'actions'],
    [{ ...RULE, conditions: [{ op: 'like', args: {} }] }, 'conditions'],
    [{ ...RULE, priority: 10000 }, 'Priority must be between 0 and 9999 for user-defined rules.'],
    [{ ...RULE, phase: 'early' }, 'Invalid phase: early. Valid phases are: main'],
    [{ ...RULE, description: 'd'.repeat(256) }, 'description'],
    [
      { ...RULE, actions: [{ op: 'add-trait', args: {} }] },
      'Invalid parameters for action operator add-trait: missing required argument(s): name',
    ],
    [{ ...RULE, colour: 'red' }, 'colour'],
  ])('refuses %j with 400', async (body, message) => {
    const res = await req('POST', '', body);
    expect(res.status).toBe(400);
    expect(faultString(res)).toContain(message);
  });
});
