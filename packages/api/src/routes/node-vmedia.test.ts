import { UnsupportedDriverExtension } from '@bmaas/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from '../testing/api-harness.js';

describe('/v1/nodes/{id}/vmedia through the conductor client', () => {
  let api: ApiHarness;
  let uuid: string;
  const path = '/v1/nodes/vm/vmedia';
  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('cond-1');
    uuid = (await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'vm' } })).body.uuid;
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(() => {
    api.conductors.calls.length = 0;
    api.conductors.clearFailures();
  });

  it('attaches (1.89) with image_download_source "local" unless given, and answers 204', async () => {
    const res = await api.request('POST', path, {
      body: { device_type: 'cdrom', image_url: 'https://images.example/boot.iso' },
      version: '1.89',
    });
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    await api.request('POST', `/v1/nodes/${uuid}/vmedia`, {
      body: { device_type: 'floppy', image_url: 'nfs://server/f.img', image_download_source: 'http' },
      version: '1.89',
    });
    expect(api.conductors.callsOf('attach_virtual_media').map((c) => c.params)).toEqual([
      {
        node_id: uuid,
        device_type: 'cdrom',
        image_url: 'https://images.example/boot.iso',
        image_download_source: 'local',
      },
      { node_id: uuid, device_type: 'floppy', image_url: 'nfs://server/f.img', image_download_source: 'http' },
    ]);
  });

  it('refuses a malformed attachment with 400 without calling a conductor', async () => {
    for (const body of [
      {},
      { device_type: 'cdrom' },
      { image_url: 'http://x/a.iso' },
      { device_type: 'usb', image_url: 'http://x/a.iso' },
      { device_type: 'cdrom', image_url: 'http://x/a.iso', image_download_source: 'glance' },
      { device_type: 'cdrom', image_url: 'http://x/a.iso', username: 'u' },
      { device_type: 'cdrom', image_url: 'ftp://x/a.iso' },
      { device_type: 'cdrom', image_url: '/local/a.iso' },
    ]) {
      const res = await api.request('POST', path, { body, version: '1.89' });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const scheme = await api.request('POST', path, {
      body: { device_type: 'cdrom', image_url: 'ftp://x/a.iso' },
      version: '1.89',
    });
    expect(faultOf(scheme.body).faultstring).toBe('Unsupported or missing URL scheme: ftp');
    expect(api.conductors.calls).toEqual([]);
  });

  it('detaches all devices, or the listed ones (?device_types=), and refuses unknown devices', async () => {
    expect((await api.request('DELETE', path, { version: '1.89' })).status).toBe(204);
    expect((await api.request('DELETE', `${path}?device_types=cdrom,disk`, { version: '1.89' })).status).toBe(204);
    expect(api.conductors.callsOf('detach_virtual_media').map((c) => c.params)).toEqual([
      { node_id: uuid },
      { node_id: uuid, device_types: ['cdrom', 'disk'] },
    ]);
    const bad = await api.request('DELETE', `${path}?device_types=cdrom,usb`, { version: '1.89' });
    expect(bad.status).toBe(400);
    expect(faultOf(bad.body).faultstring).toBe('Invalid device type(s) usb (valid are disk, cdrom, floppy)');
    expect((await api.request('DELETE', `${path}?devices=cdrom`, { version: '1.89' })).status).toBe(400);
    expect(api.conductors.callsOf('detach_virtual_media')).toHaveLength(2);
  });

  it('lists (1.93) what the conductor answers', async () => {
    const media = { cdrom: { inserted: true, image_url: 'http://x/a.iso' } };
    api.conductors.respondWith('get_virtual_media', () => media);
    const res = await api.request('GET', path, { version: '1.93' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(media);
    expect(api.conductors.callsOf('get_virtual_media').map((c) => c.params)).toEqual([{ node_id: uuid }]);
  });

  it('is not found below 1.89 (listing below 1.93), as an unknown path', async () => {
    const body = { device_type: 'cdrom', image_url: 'http://x/a.iso' };
    expect((await api.request('POST', path, { body, version: '1.88' })).status).toBe(404);
    expect((await api.request('DELETE', path, { version: '1.88' })).status).toBe(404);
    expect((await api.request('GET', path, { version: '1.92' })).status).toBe(404);
    expect(api.conductors.calls).toEqual([]);
    expect((await api.request('POST', '/v1/nodes/nope/vmedia', { body, version: '1.89' })).status).toBe(404);
  });

  it("maps the conductor's UnsupportedDriverExtension to 400 and refuses other methods with 405", async () => {
    api.conductors.failWith('attach_virtual_media', new UnsupportedDriverExtension('ipmi', 'attach_virtual_media'));
    const res = await api.request('POST', path, {
      body: { device_type: 'cdrom', image_url: 'http://x/a.iso' },
      version: '1.89',
    });
    expect(res.status).toBe(400);
    expect(faultOf(res.body).faultstring).toBe(
      'Driver ipmi does not support attach_virtual_media (disabled or not implemented).',
    );
    expect((await api.request('PUT', path, { body: {}, version: '1.93' })).status).toBe(405);
  });
});
