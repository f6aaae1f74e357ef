import { BootConfigNotFound } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, basicAuthorization } from '../testing/api-harness.js';

const MAC = '52:54:00:bb:00:01';
const BASIC = basicAuthorization('admin', 's3cret');

interface BootRequestsBody {
  api_process: { pid: number; hostname: string; started_at: string };
  capacity: number;
  total: number;
  served: number;
  boot_requests: Array<{
    time: string;
    outcome: string;
    name: string | null;
    mac: string | null;
    node_uuid: string | null;
    duration_ms: number;
  }>;
}

describe('GET /dashboard/boot-requests: the boot handler observed by this process', () => {
  let api: ApiHarness;
  let nodeUuid: string;

  beforeAll(async () => {
    api = await ApiHarness.start({ htpasswd: `admin:${await bcrypt.hash('s3cret', 4)}\n` });
    await api.registerConductor('conductor-a');
    nodeUuid = (
      await api.storeNode('wait call-back', [MAC], { create: { bootInterface: 'fake', deployInterface: 'fake' } })
    ).uuid;
    api.conductors.respondWith('get_boot_config', ({ node_id, name }) => {
      if (name !== 'boot.fake') throw new BootConfigNotFound(node_id, name);
      return { content: 'fake\n' };
    });
  });
  afterAll(() => api?.close());

  const bootRequests = () =>
    api.request<BootRequestsBody>('GET', '/dashboard/boot-requests', { headers: { Authorization: BASIC } });

  it('is empty before any boot request, and says which process it is', async () => {
    const answer = await bootRequests();
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ capacity: 200, total: 0, served: 0, boot_requests: [] });
    expect(answer.body.api_process.pid).toBe(process.pid);
  });

  it('records each answered request once, newest first, with outcome, name, parsed MAC and node', async () => {
    const upper = MAC.toUpperCase().replaceAll(':', '-');
    expect((await fetch(`${api.baseUrl}/v1/boot/${upper}/boot.fake`)).status).toBe(200);
    expect((await fetch(`${api.baseUrl}/v1/boot/${MAC}/boot.ipxe`)).status).toBe(404);
    expect((await fetch(`${api.baseUrl}/v1/boot/52:54:00:00:00:99/boot.fake`)).status).toBe(404);
    expect((await fetch(`${api.baseUrl}/v1/boot/not-a-mac/boot.fake`)).status).toBe(404);
    expect((await fetch(`${api.baseUrl}/v1/boot/${MAC}/boot.fake/extra`)).status).toBe(404);
    const answer = await bootRequests();
    expect(answer.body).toMatchObject({ total: 5, served: 1 });
    const rows = answer.body.boot_requests.map(({ outcome, name, mac, node_uuid }) => ({
      outcome,
      name,
      mac,
      node_uuid,
    }));
    expect(rows).toEqual([
      { outcome: 'malformed-request', name: null, mac: null, node_uuid: null },
      { outcome: 'malformed-mac', name: 'boot.fake', mac: null, node_uuid: null },
      { outcome: 'unknown-mac', name: 'boot.fake', mac: '52:54:00:00:00:99', node_uuid: null },
      { outcome: 'config-not-found', name: 'boot.ipxe', mac: MAC, node_uuid: nodeUuid },
      { outcome: 'served', name: 'boot.fake', mac: MAC, node_uuid: nodeUuid },
    ]);
    for (const row of answer.body.boot_requests) {
      expect(row.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Date.parse(row.time)).not.toBeNaN();
    }
  });

  it('answers 401 without credentials (the boot path itself stays public)', async () => {
    const anonymous = await api.request('GET', '/dashboard/boot-requests');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="Baremetal API"');
  });
});
