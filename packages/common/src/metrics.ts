import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * The metrics registry of one process (API or conductor), created by its
 * composition root and passed to whatever records: never prom-client's
 * global registry. It starts with prom-client's process and Node.js metrics
 * (CPU, memory, event loop lag, handles, GC), collected when scraped.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Seconds since `started` (a performance.now() reading), for histograms in base units. */
export function secondsSince(started: number): number {
  return (performance.now() - started) / 1000;
}
export { Registry } from 'prom-client';
