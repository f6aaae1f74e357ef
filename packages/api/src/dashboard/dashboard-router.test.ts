import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, basicAuthorization } from '../testing/api-harness.js';

const BASIC = basicAuthorization('admin', 's3cret');
/** What Chromium sends for a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

async function get(api: ApiHarness, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${api.baseUrl}${path}`, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('the fleet page with http_basic', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({ htpasswd: `admin:${await bcrypt.hash('s3cret', 4)}\n` });
  });
  afterAll(() => api?.close());

  it('serves the page at / to a browser and at /dashboard, with credentials only', async () => {
    for (const [path, accept] of [
      ['/', BROWSER_ACCEPT],
      ['/dashboard', BROWSER_ACCEPT],
      ['/dashboard', 'application/json'],
    ] as const) {
      const anonymous = await get(api, path, { Accept: accept });
      expect(anonymous.status, `${path} ${accept}`).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="Baremetal API"');
      const page = await get(api, path, { Accept: accept, Authorization: BASIC });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.text).toContain('<script src="/dashboard/fleet.js" defer></script>');
    }
  });

  it('serves its script and style sheet, with credentials only', async () => {
    for (const [name, type] of [
      ['fleet.js', 'text/javascript; charset=utf-8'],
      ['fleet.css', 'text/css; charset=utf-8'],
    ] as const) {
      expect((await get(api, `/dashboard/${name}`)).status).toBe(401);
      const file = await get(api, `/dashboard/${name}`, { Authorization: BASIC });
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe(type);
      expect(file.text.length).toBeGreaterThan(100);
    }
  });

  it('keeps / the public versions document for JSON clients and clients that send no Accept', async () => {
    for (const headers of [{ Accept: 'application/json' }, {}, { Accept: '*/*' }] as Array<Record<string, string>>) {
      const root = await get(api, '/', headers);
      expect(root.status).toBe(200);
      expect(root.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(root.headers.get('vary')).toBe('Accept');
      expect(JSON.parse(root.text)).toMatchObject({ name: 'OpenStack Ironic API', default_version: { id: 'v1' } });
    }
  });

  it('answers other methods with 405 and unknown files with 404', async () => {
    const post = await fetch(`${api.baseUrl}/dashboard`, { method: 'POST', headers: { Authorization: BASIC } });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect((await get(api, '/dashboard/app.js', { Authorization: BASIC })).status).toBe(404);
  });
});

describe('the fleet page with noauth', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start();
  });
  afterAll(() => api?.close());

  it('serves the page to a browser at / without credentials', async () => {
    const page = await get(api, '/', { Accept: BROWSER_ACCEPT });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Fleet</h1>');
  });
});
