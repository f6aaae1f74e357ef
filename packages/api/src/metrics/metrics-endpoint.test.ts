import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BootConfigNotFound, parsePrometheusText, sampleSum } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';

const MAC = '52:54:00:ab:00:01';
const FAKE_NODE = {
  driver: 'fake-hardware',
  bootInterface: 'ipxe',
  deployInterface: 'direct',
  powerInterface: 'fake',
  managementInterface: 'fake',
};

async function scrape(api: ApiHarness, headers: Record<string, string> = {}) {
  const response = await fetch(`${api.baseUrl}/metrics`, { headers });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), text };
}

describe('GET /metrics on the API', () => {
  let api: ApiHarness;
  let nodeUuid: string;

  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('conductor-a');
    const node = await api.stores.nodes.create({ uuid: randomUUID(), ...FAKE_NODE });
    nodeUuid = node.uuid;
    await api.stores.nodes.update(node.id, { provisionState: 'wait call-back' });
    await api.stores.ports.create({ uuid: randomUUID(), address: MAC, nodeId: node.id });
    api.conductors.respondWith('get_boot_config', ({ node_id, name }) => {
      if (name !== 'boot.ipxe') throw new BootConfigNotFound(node_id, name);
      return { content: `#!ipxe\n# ${node_id}\n` };
    });
  });
  afterAll(() => api.close());

  it('serves the Prometheus text format with the process metrics', async () => {
    const answer = await scrape(api);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parsePrometheusText(answer.text);
    expect(sampleSum(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('counts served and refused boot requests by outcome and name, their latency, never a MAC or node', async () => {
    const before = parsePrometheusText((await scrape(api)).text);
    expect((await fetch(`${api.baseUrl}/v1/boot/${MAC}/boot.ipxe`)).status).toBe(200);
    expect((await fetch(`${api.baseUrl}/v1/boot/${MAC}/grub.cfg`)).status).toBe(404);
    expect((await fetch(`${api.baseUrl}/v1/boot/52:54:00:ff:ff:ff/boot.ipxe`)).status).toBe(404);
    expect((await fetch(`${api.baseUrl}/v1/boot/${MAC}/whatever.cfg`)).status).toBe(404);
    const answer = await scrape(api);
    const after = parsePrometheusText(answer.text);
    const moved = (labels: Record<string, string>) =>
      sampleSum(after, 'bmaas_boot_config_requests_total', labels) -
      sampleSum(before, 'bmaas_boot_config_requests_total', labels);
    expect(moved({ outcome: 'served', name: 'boot.ipxe' })).toBe(1);
    // No conductor served a grub.cfg: a name requesters chose, so other.
    expect(moved({ outcome: 'config-not-found', name: 'grub.cfg' })).toBe(0);
    expect(moved({ outcome: 'unknown-mac', name: 'boot.ipxe' })).toBe(1);
    expect(moved({ outcome: 'config-not-found', name: 'other' })).toBe(2);
    expect(moved({})).toBe(4);
    const count = 'bmaas_boot_config_request_duration_seconds_count';
    expect(sampleSum(after, count, { status: '200' }) - sampleSum(before, count, { status: '200' })).toBe(1);
    expect(sampleSum(after, count, { status: '404' }) - sampleSum(before, count, { status: '404' })).toBe(3);
    expect(answer.text).not.toContain(MAC);
    expect(answer.text).not.toContain(nodeUuid);
  });

  it('records REST latencies by route template, not by path', async () => {
    expect((await api.request('GET', `/v1/nodes/${nodeUuid}`)).status).toBe(200);
    expect((await api.request('GET', `/v1/nodes/${randomUUID()}`)).status).toBe(404);
    expect((await api.request('GET', '/v1/no-such-thing')).status).toBe(404);
    const answer = await scrape(api);
    const samples = parsePrometheusText(answer.text);
    const name = 'bmaas_http_request_duration_seconds_count';
    expect(sampleSum(samples, name, { method: 'GET', route: '/v1/nodes/:ident', status_code: '200' })).toBe(1);
    expect(sampleSum(samples, name, { method: 'GET', route: '/v1/nodes/:ident', status_code: '404' })).toBe(1);
    expect(sampleSum(samples, name, { route: 'unmatched', status_code: '404' })).toBeGreaterThanOrEqual(1);
    expect(answer.text).not.toContain(nodeUuid);
  });

  it('counts nodes by provision state and conductor from the database when scraped', async () => {
    const count = async () => sampleSum(parsePrometheusText((await scrape(api)).text), 'bmaas_nodes');
    const total = await count();
    const samples = parsePrometheusText((await scrape(api)).text);
    expect(sampleSum(samples, 'bmaas_nodes', { provision_state: 'wait call-back', conductor: 'none' })).toBe(1);
    const conductorId = (await api.stores.conductors.get('conductor-a', 60))?.id;
    const other = await api.stores.nodes.create({ uuid: randomUUID(), ...FAKE_NODE });
    await api.stores.nodes.update(other.id, { provisionState: 'active', conductorAffinity: conductorId ?? null });
    const now = parsePrometheusText((await scrape(api)).text);
    expect(sampleSum(now, 'bmaas_nodes', { provision_state: 'active', conductor: 'conductor-a' })).toBe(1);
    expect(await count()).toBe(total + 1);
  });
});

describe('GET /metrics with HTTP basic auth', () => {
  let api: ApiHarness;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-metrics-auth-'));
    const htpasswd = join(dir, 'htpasswd');
    writeFileSync(htpasswd, `prometheus:${bcrypt.hashSync('scrape', 4)}\n`);
    api = await ApiHarness.start({
      overrides: { DEFAULT: { auth_strategy: 'http_basic', http_basic_auth_user_file: htpasswd } },
    });
  });
  afterAll(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('needs the same credentials as the REST API', async () => {
    const anonymous = await scrape(api);
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).not.toContain('bmaas_');
    const wrong = await scrape(api, { Authorization: `Basic ${Buffer.from('prometheus:nope').toString('base64')}` });
    expect(wrong.status).toBe(401);
    const right = await scrape(api, { Authorization: `Basic ${Buffer.from('prometheus:scrape').toString('base64')}` });
    expect(right.status).toBe(200);
    expect(right.text).toContain('bmaas_boot_config_requests_total');
  });
});
