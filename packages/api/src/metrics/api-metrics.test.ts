import { parsePrometheusText, Registry, sampleSum } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import type { BootRequestEvent } from '../boot/boot-request-observer.js';
import { ApiMetrics, MAX_BOOT_CONFIG_NAMES } from './api-metrics.js';

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
  it('counts boot requests by outcome and by the config names conductors served, other names as other', async () => {
    const registry = new Registry();
    const metrics = new ApiMetrics(registry);
    // Refused before any conductor served it: no name of the API's own, so other.
    metrics.observe(event({ outcome: 'unknown-mac', name: 'grub.cfg', nodeUuid: undefined }));
    metrics.observe(event({}));
    metrics.observe(event({ name: 'grub.cfg' }));
    metrics.observe(event({ outcome: 'unknown-mac', name: 'boot.ipxe', nodeUuid: undefined }));
    metrics.observe(event({ outcome: 'malformed-request', name: undefined, mac: undefined, nodeUuid: undefined }));
    metrics.observe(event({ outcome: 'config-not-found', name: 'pxelinux.cfg' }));
    metrics.observe(event({ outcome: 'server-error', name: 'boot.ipxe' }));

    const samples = await scrape(registry);
    const count = (outcome: string, name: string) =>
      sampleSum(samples, 'bmaas_boot_config_requests_total', { outcome, name });
    expect(count('unknown-mac', 'other')).toBe(1);
    expect(count('served', 'boot.ipxe')).toBe(1);
    expect(count('served', 'grub.cfg')).toBe(1);
    expect(count('unknown-mac', 'boot.ipxe')).toBe(1);
    expect(count('malformed-request', 'other')).toBe(1);
    expect(count('config-not-found', 'other')).toBe(1);
    expect(count('server-error', 'boot.ipxe')).toBe(1);
    expect(sampleSum(samples, 'bmaas_boot_config_requests_total')).toBe(7);
  });

  it('exports every outcome at zero from the start, and every outcome of a name once it was served', async () => {
    const metrics = new ApiMetrics(new Registry());
    const series = async () =>
      (await scrape(metrics.registry)).filter((s) => s.name === 'bmaas_boot_config_requests_total');
    const first = await series();
    expect(first.every((s) => s.value === 0)).toBe(true);
    const outcomes = new Set(first.map((s) => s.labels.outcome));
    expect(outcomes).toContain('deadline');
    expect(outcomes).toContain('state-not-allowed');
    expect(new Set(first.map((s) => s.labels.name))).toEqual(new Set(['other']));
    metrics.observe(event({ name: 'config.http' }));
    const named = (await series()).filter((s) => s.labels.name === 'config.http');
    expect(new Set(named.map((s) => s.labels.outcome))).toEqual(outcomes);
  });

  it('counts at most MAX_BOOT_CONFIG_NAMES names under their own label', async () => {
    const metrics = new ApiMetrics(new Registry());
    for (let i = 0; i < MAX_BOOT_CONFIG_NAMES + 5; i++) metrics.observe(event({ name: `name-${i}` }));
    const names = new Set(
      (await scrape(metrics.registry))
        .filter((s) => s.name === 'bmaas_boot_config_requests_total')
        .map((s) => s.labels.name),
    );
    expect(names.size).toBe(MAX_BOOT_CONFIG_NAMES);
    expect(names).toContain('other');
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
