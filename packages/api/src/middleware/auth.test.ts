import { HtpasswdUsers } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, basicAuthorization as basic, faultOf } from '../testing/api-harness.js';

describe('http_basic authentication', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    const hash = (await bcrypt.hash('s3cret', 4)).replace(/^\$2b\$/, '$2y$');
    api = await ApiHarness.start({ htpasswd: `# operators\nadmin:${hash}\n` });
  });
  afterAll(() => api?.close());

  it('answers 401 with a Basic challenge without or with wrong credentials', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { Authorization: basic('admin', 'nope') },
      { Authorization: basic('eve', 's3cret') },
    ];
    for (const headers of attempts) {
      const res = await api.request('GET', '/v1/nodes', { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="Baremetal API"');
      expect(faultOf(res.body).faultcode).toBe('Client');
    }
    const token = await api.request('GET', '/v1/nodes', { headers: { 'X-Auth-Token': 'abc' } });
    expect(token.status).toBe(401);
  });

  it('serves authenticated requests', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await api.request('GET', '/v1/nodes', { headers: { Authorization: basic('admin', 's3cret') } });
      expect(res.status).toBe(200);
    }
  });

  it('keeps /, /v1 and the firmware and ramdisk paths public', async () => {
    expect((await api.request('GET', '/')).status).toBe(200);
    expect((await api.request('GET', '/v1')).status).toBe(200);
    expect((await api.request('GET', '/v1/')).status).toBe(200);
    // Not 401: each answers for itself (unknown MAC; no valid address; heartbeat takes POST only).
    const expected: Array<[string, number]> = [
      ['/v1/boot/525400123456/boot.ipxe', 404],
      ['/v1/lookup?addresses=52:54:00:00:00:09', 404],
      ['/v1/lookup?addresses=x', 400],
      ['/v1/heartbeat/node', 405],
    ];
    for (const [path, status] of expected) expect((await api.request('GET', path)).status, path).toBe(status);
  });
});

describe('noauth', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('ignores X-Auth-Token and Authorization', async () => {
    const res = await api.request('GET', '/v1/nodes', {
      headers: { 'X-Auth-Token': 'whatever', Authorization: basic('x', 'y') },
    });
    expect(res.status).toBe(200);
  });
});

describe('htpasswd files', () => {
  it('accepts bcrypt entries and refuses any other digest at load time', async () => {
    const hash = await bcrypt.hash('pw', 4);
    const users = HtpasswdUsers.parse(`\nops:${hash}\n`);
    expect(await users.verify('ops', 'pw')).toBe(true);
    expect(await users.verify('ops', 'PW')).toBe(false);
    expect(await users.verify('nobody', 'pw')).toBe(false);
    expect(() => HtpasswdUsers.parse('ops:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=', 'users')).toThrow(/users:1/);
    expect(() => HtpasswdUsers.parse('just-a-name')).toThrow(/bcrypt/);
    expect(() => HtpasswdUsers.fromFile('/nonexistent/htpasswd')).toThrow(/cannot read/);
  });
});
