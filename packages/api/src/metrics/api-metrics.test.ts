import { parsePrometheusText, Registry, sampleSum } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import type { BootRequestEvent } from '../boot/boot-request-observer.js';
import { ApiMetrics } from './api-metrics.js';

function event(overrides: Partial<BootRequestEvent>): BootRequestEvent {
  return {
    outcome: 'served',
    name: 'boot.ipxe',
    mac: '52:54:00:aa:00:01',
    nodeUuid: '0b9bd5f4-8d7e-4f3c-9e0a-1f2b3c4d5e6f',
    durationSeconds: 0.004,
    ...overrides,
  };
}

async function scrape(registry: Registry) {
  return parsePrometheusText(await registry.metrics());
}

describe('ApiMetrics', () => {
  it('counts boot requests by outcome and known config name, other names as other', async () => {
    const registry = new Registry();
    const metrics = new ApiMetrics(registry);
    metrics.observe(event({}));
    metrics.observe(event({ name: 'grub.cfg' }));
    metrics.observe(event({ outcome: 'unknown-mac', name: 'boot.ipxe', nodeUuid: undefined }));
    metrics.observe(event({ outcome: 'malformed-request', name: undefined, mac: undefined, nodeUuid: undefined }));
    metrics.observe(event({ outcome: 'config-not-found', name: 'pxelinux.cfg' }));
    metrics.observe(event({ outcome: 'server-error', name: 'boot.ipxe' }));

    const samples = await scrape(registry);
    const count = (outcome: string, name: string) =>
      sampleSum(samples, 'bmaas_boot_config_requests_total', { outcome, name });
    expect(count('served', 'boot.ipxe')).toBe(1);
    expect(count('served', 'grub.cfg')).toBe(1);
    expect(count('unknown-mac', 'boot.ipxe')).toBe(1);
    expect(count('malformed-request', 'other')).toBe(1);
    expect(count('config-not-found', 'other')).toBe(1);
    expect(count('server-error', 'boot.ipxe')).toBe(1);
    expect(sampleSum(samples, 'bmaas_boot_config_requests_total')).toBe(6);
  });

  it('exports every outcome and name at zero from the start, so rates exist before the first refusal', async () => {
    const samples = await scrape(new ApiMetrics(new Registry()).registry);
    const series = samples.filter((s) => s.name === 'bmaas_boot_config_requests_total');
    expect(series.every((s) => s.value === 0)).toBe(true);
    const outcomes = new Set(series.map((s) => s.labels.outcome));
    expect(outcomes).toContain('deadline');
    expect(outcomes).toContain('state-not-allowed');
    expect(new Set(series.map((s) => s.labels.name))).toEqual(
      new Set(['boot.ipxe', 'grub.cfg', 'discovery.ipxe', 'other']),
    );
  });

  it('puts boot answer latencies in the histogram by status, in seconds', async () => {
    const registry = new Registry();
    const metrics = new ApiMetrics(registry);
    metrics.observe(event({ durationSeconds: 0.003 }));
    metrics.observe(event({ outcome: 'unknown-mac', durationSeconds: 0.2 }));
    metrics.observe(event({ outcome: 'server-error', durationSeconds: 7 }));
    const samples = await scrape(registry);
    const name = 'bmaas_boot_config_request_duration_seconds';
    expect(sampleSum(samples, `${name}_count`, { status: '200' })).toBe(1);
    expect(sampleSum(samples, `${name}_sum`, { status: '200' })).toBeCloseTo(0.003);
    expect(sampleSum(samples, `${name}_bucket`, { status: '200', le: '0.005' })).toBe(1);
    expect(sampleSum(samples, `${name}_bucket`, { status: '200', le: '0.0025' })).toBe(0);
    expect(sampleSum(samples, `${name}_count`, { status: '404' })).toBe(1);
    expect(sampleSum(samples, `${name}_bucket`, { status: '500', le: '5' })).toBe(0);
    expect(sampleSum(samples, `${name}_bucket`, { status: '500', le: '10' })).toBe(1);
  });

  it('records REST latencies by method, route template and status code', async () => {
    const registry = new Registry();
    const metrics = new ApiMetrics(registry);
    metrics.observeRestRequest('GET', '/v1/nodes/:node_ident', 200, 0.02);
    metrics.observeRestRequest('GET', '/v1/nodes/:node_ident', 404, 0.01);
    metrics.observeRestRequest('GET', 'unmatched', 404, 0.001);
    const samples = await scrape(registry);
    const name = 'bmaas_http_request_duration_seconds_count';
    expect(sampleSum(samples, name, { method: 'GET', route: '/v1/nodes/:node_ident', status_code: '200' })).toBe(1);
    expect(sampleSum(samples, name, { route: '/v1/nodes/:node_ident' })).toBe(2);
    expect(sampleSum(samples, name, { route: 'unmatched', status_code: '404' })).toBe(1);
  });

  it('registers in the registry it is given only: two recorders never share figures', async () => {
    const a = new ApiMetrics(new Registry());
    const b = new ApiMetrics(new Registry());
    a.observe(event({}));
    expect(sampleSum(await scrape(a.registry), 'bmaas_boot_config_requests_total')).toBe(1);
    expect(sampleSum(await scrape(b.registry), 'bmaas_boot_config_requests_total')).toBe(0);
  });
});
