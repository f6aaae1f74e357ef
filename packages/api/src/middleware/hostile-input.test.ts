import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, type ApiResponse, faultOf } from '../testing/api-harness.js';

/** Each of these inputs once answered 500; each must be a 400 with Ironic's error body. */
let api: ApiHarness;
let nodeUuid: string;
let portUuid: string;

beforeAll(async () => {
  api = await ApiHarness.start();
  await api.registerConductor('conductor-1');
  ({ nodeUuid, portUuid } = await api.enrolNode('hostile-1', '52:54:00:aa:bb:01'));
});
afterAll(async () => {
  await api?.close();
});

function expectClientFault(res: ApiResponse, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(400);
  const fault = faultOf(res.body);
  expect(fault.faultcode, what).toBe('Client');
  expect(fault.faultstring, what).not.toMatch(/\n\s+at /);
}

describe('NUL characters in strings', () => {
  it('are refused in node create, node PATCH and port create and PATCH, in values and in keys', async () => {
    const cases: Array<[string, string, unknown]> = [
      ['POST', '/v1/nodes', { driver: 'fake-hardware', name: 'a\u0000b' }],
      ['POST', '/v1/nodes', { driver: 'fake-hardware', extra: { 'k\u0000': 'v' } }],
      ['POST', '/v1/nodes', { driver: 'fake-hardware', properties: { cpus: ['x\u0000'] } }],
      ['PATCH', `/v1/nodes/${nodeUuid}`, [{ op: 'replace', path: '/description', value: 'x\u0000y' }]],
      ['PATCH', `/v1/nodes/${nodeUuid}`, [{ op: 'add', path: '/extra/a\u0000', value: 'y' }]],
      ['POST', '/v1/ports', { address: '52:54:00:aa:bb:02', node_uuid: nodeUuid, extra: { a: '\u0000' } }],
      ['PATCH', `/v1/ports/${portUuid}`, [{ op: 'add', path: '/extra/a', value: '\u0000' }]],
    ];
    for (const [method, path, body] of cases) {
      expectClientFault(await api.request(method, path, { body }), `${method} ${path} ${JSON.stringify(body)}`);
    }
    // Nothing was changed by the refused PATCHes.
    const node = await api.request('GET', `/v1/nodes/${nodeUuid}`);
    expect(node.body.description).toBeNull();
    expect(node.body.extra).toEqual({});
  });

  it('are refused in query parameters and path parameters', async () => {
    expectClientFault(await api.request('GET', '/v1/nodes?name=a%00'), 'query');
    expectClientFault(await api.request('GET', '/v1/nodes/a%00b'), 'path');
    expectClientFault(await api.request('GET', '/v1/ports?address=52%00'), 'port query');
    expectClientFault(await api.request('GET', '/v1/conductors/a%00b'), 'conductor path');
    expectClientFault(await api.request('GET', '/v1/drivers/%00'), 'driver path');
  });
});

describe('deeply nested JSON', () => {
  it('is refused, whatever the route, without exhausting the stack', async () => {
    const depth = 100_000;
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const deepObject = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const cases: Array<[string, string, string]> = [
      ['POST', '/v1/nodes', `{"driver":"fake-hardware","extra":{"x":${deep}}}`],
      ['POST', '/v1/nodes', deepObject],
      ['PATCH', `/v1/nodes/${nodeUuid}`, `[{"op":"add","path":"/extra/x","value":${deep}}]`],
      ['POST', '/v1/ports', `{"address":"52:54:00:aa:bb:03","node_uuid":"${nodeUuid}","extra":${deepObject}}`],
    ];
    for (const [method, path, rawBody] of cases) {
      expectClientFault(await api.request(method, path, { rawBody }), `${method} ${path}`);
    }
    // A reasonable nesting is still accepted.
    const fine = await api.request('PATCH', `/v1/nodes/${nodeUuid}`, {
      body: [{ op: 'add', path: '/extra/nested', value: { a: { b: { c: [1, [2, [3]]] } } } }],
    });
    expect(fine.status).toBe(200);
  });
});

describe('malformed percent-encoding in a path', () => {
  it('is a 400 on every parameterised route, the public heartbeat included', async () => {
    const cases: Array<[string, string]> = [
      ['GET', '/v1/nodes/%E0%A4%A'],
      ['PATCH', '/v1/nodes/%ZZ'],
      ['DELETE', '/v1/nodes/%'],
      ['GET', '/v1/nodes/%C0/states'],
      ['PUT', '/v1/nodes/%FF/states/provision'],
      ['GET', '/v1/ports/%E0%A4%A'],
      ['GET', '/v1/nodes/%E0%A4%A/ports'],
      ['GET', '/v1/conductors/%E0%A4%A'],
      ['GET', '/v1/drivers/%E0%A4%A'],
      ['POST', '/v1/heartbeat/%E0%A4%A'],
    ];
    for (const [method, path] of cases) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      expectClientFault(await api.request(method, path, { body }), `${method} ${path}`);
    }
  });
});

describe('sort_key', () => {
  it('refuses names of Object.prototype members on every list', async () => {
    for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      for (const list of ['/v1/nodes', '/v1/nodes/detail', '/v1/ports', '/v1/ports/detail', '/v1/conductors']) {
        expectClientFault(await api.request('GET', `${list}?sort_key=${key}`), `${list} sort_key=${key}`);
      }
    }
  });
});

describe('Content-Encoding', () => {
  it('refuses a body that says gzip and is not', async () => {
    const res = await api.request('POST', '/v1/nodes', {
      rawBody: '{"driver":"fake-hardware"}',
      headers: { 'Content-Encoding': 'gzip' },
    });
    expectClientFault(res, 'not gzip');
  });

  it('accepts a body that is gzip', async () => {
    const res = await fetch(`${api.baseUrl}/v1/nodes`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
        'X-OpenStack-Ironic-API-Version': '1.78',
      },
      body: gzipSync('{"driver":"fake-hardware","name":"zipped"}'),
    });
    expect(res.status).toBe(201);
  });
});
