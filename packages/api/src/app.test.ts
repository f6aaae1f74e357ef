import { PassThrough } from 'node:stream';
import { createRootLogger } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from './testing/api-harness.js';
import { MAX_VERSION } from './versions.js';

describe('API basics: versions, request ids, errors', () => {
  let api: ApiHarness;
  const logLines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
    });
    api = await ApiHarness.start({ logger: createRootLogger({ level: 'info', format: 'json', stream }) });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('GET / lists the v1 version with its range and links', async () => {
    const res = await api.request('GET', '/', { version: null });
    expect(res.status).toBe(200);
    expect(res.body.default_version).toEqual({
      id: 'v1',
      links: [{ href: `${api.baseUrl}/v1/`, rel: 'self' }],
      status: 'CURRENT',
      min_version: '1.1',
      version: MAX_VERSION,
    });
    expect(res.body.versions).toEqual([res.body.default_version]);
  });

  it('GET /v1 answers the resource document at 1.1 without a version header', async () => {
    const res = await api.request('GET', '/v1', { version: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-openstack-ironic-api-version')).toBe('1.1');
    expect(res.headers.get('x-openstack-ironic-api-minimum-version')).toBe('1.1');
    expect(res.headers.get('x-openstack-ironic-api-maximum-version')).toBe(MAX_VERSION);
    expect(res.body.media_types).toEqual({
      base: 'application/json',
      type: 'application/vnd.openstack.ironic.v1+json',
    });
    expect(res.body.nodes).toEqual([
      { href: `${api.baseUrl}/v1/nodes/`, rel: 'self' },
      { href: `${api.baseUrl}/nodes/`, rel: 'bookmark' },
    ]);
    expect(Object.keys(res.body.version).sort()).toEqual(['id', 'links', 'min_version', 'status', 'version']);
    expect(res.body.conductors).toBeUndefined();
    const latest = await api.request('GET', '/v1', { version: 'latest' });
    expect(latest.headers.get('x-openstack-ironic-api-version')).toBe(MAX_VERSION);
    expect(latest.body.conductors).toHaveLength(2);
  });

  it('negotiates 1.1, the maximum and latest; refuses above the range with 406 and malformed with 400', async () => {
    for (const [asked, served] of [
      ['1.1', '1.1'],
      [MAX_VERSION, MAX_VERSION],
      ['latest', MAX_VERSION],
      ['LATEST', MAX_VERSION],
    ]) {
      const res = await api.request('GET', '/v1/nodes', { version: asked });
      expect(res.status, asked).toBe(200);
      expect(res.headers.get('x-openstack-ironic-api-version')).toBe(served);
    }
    const generic = await api.request('GET', '/v1/nodes', {
      version: null,
      headers: { 'OpenStack-API-Version': 'baremetal 1.31' },
    });
    expect(generic.headers.get('x-openstack-ironic-api-version')).toBe('1.31');

    const [major, minor] = MAX_VERSION.split('.').map(Number);
    for (const asked of [`${major}.${(minor as number) + 1}`, '1.0', '2.1']) {
      const res = await api.request('GET', '/v1/nodes', { version: asked });
      expect(res.status, asked).toBe(406);
      expect(res.headers.get('x-openstack-ironic-api-minimum-version')).toBe('1.1');
      expect(res.headers.get('x-openstack-ironic-api-maximum-version')).toBe(MAX_VERSION);
      expect(faultOf(res.body)).toMatchObject({ faultcode: 'Client', debuginfo: null });
      expect(faultOf(res.body).faultstring).toContain(`[1.1, ${MAX_VERSION}]`);
    }
    for (const asked of ['one.two', '1', '1.x', '1.2.3']) {
      const res = await api.request('GET', '/v1/nodes', { version: asked });
      expect(res.status, asked).toBe(400);
      expect(res.headers.get('x-openstack-ironic-api-maximum-version')).toBe(MAX_VERSION);
    }
  });

  it('gives every answer a request id in both headers', async () => {
    const first = await api.request('GET', '/v1');
    const second = await api.request('GET', '/v1/nope');
    for (const res of [first, second]) {
      const id = res.headers.get('openstack-request-id');
      expect(id).toMatch(/^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(res.headers.get('x-openstack-request-id')).toBe(id);
    }
    expect(first.headers.get('openstack-request-id')).not.toBe(second.headers.get('openstack-request-id'));
  });

  it('answers unknown paths 404 in the Ironic error format, with version headers', async () => {
    const res = await api.request('GET', '/v1/no-such-resource');
    expect(res.status).toBe(404);
    expect(res.headers.get('x-openstack-ironic-api-version')).toBe('1.78');
    expect(res.body).toEqual({
      error_message: JSON.stringify({
        faultcode: 'Client',
        faultstring: 'The resource could not be found.',
        debuginfo: null,
      }),
    });
  });

  it('answers 405 with Allow for a method a resource does not have', async () => {
    const res = await api.request('PUT', '/v1/nodes', { body: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
    expect(faultOf(res.body).faultcode).toBe('Client');
    const root = await api.request('POST', '/v1', { body: {} });
    expect(root.status).toBe(405);
  });

  it('answers a malformed JSON body with 400 in the same format', async () => {
    const res = await api.request('POST', '/v1/nodes', { rawBody: '{"driver": ' });
    expect(res.status).toBe(400);
    expect(faultOf(res.body)).toEqual({
      faultcode: 'Client',
      faultstring: 'The request body is not valid JSON.',
      debuginfo: null,
    });
  });

  it('leaves the firmware and ramdisk prefixes out of version negotiation', async () => {
    const res = await api.request('GET', '/v1/boot/52:54:00:12:34:56/boot.ipxe', { version: '9.9' });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-openstack-ironic-api-maximum-version')).toBeNull();
  });

  it('logs one access line per request with method, path, status, duration and request id', async () => {
    logLines.length = 0;
    const res = await api.request('GET', '/v1/nodes?limit=5');
    const access = logLines.filter((line) => line.path === '/v1/nodes');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({
      level: 'info',
      component: 'api',
      method: 'GET',
      status: 200,
      requestId: res.headers.get('openstack-request-id'),
    });
    expect(typeof access[0]?.durationMs).toBe('number');
  });

  it('answers an unexpected failure with a generic 500 and logs its stack as an error', async () => {
    await api.registerConductor('cond-1');
    const node = await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware' } });
    api.conductors.failWith('do_provisioning_action', new Error('db password is hunter2'));
    logLines.length = 0;
    const res = await api.request('PUT', `/v1/nodes/${node.body.uuid}/states/provision`, {
      body: { target: 'manage' },
    });
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
    const errors = logLines.filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(String(errors[0]?.stack)).toContain('hunter2');
    expect(errors[0]?.requestId).toBe(res.headers.get('openstack-request-id'));
  });
});
