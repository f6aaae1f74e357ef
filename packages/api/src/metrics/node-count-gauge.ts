import type { Logger } from '@bmaas/common';
import type { NodeCountStore } from '@bmaas/db';
import { Gauge, type Registry } from 'prom-client';

/**
 * `bmaas_nodes`: nodes by provision state and by the conductor that prepared
 * them (`none` when no conductor did yet), counted when scraped with one
 * grouped query. The API reports it, not the conductors: the figures are
 * global (every node counted once, whatever its conductor's health), and
 * the scrape costs one query however many conductors run. Scrapes that
 * arrive while a count runs share it. When the database does not answer,
 * the scrape still succeeds without this metric (and the failure is logged).
 */
export function registerNodeCountGauge(
  registry: Registry,
  nodes: Pick<NodeCountStore, 'countByStateAndConductor'>,
  logger: Logger,
): void {
  let counting: ReturnType<NodeCountStore['countByStateAndConductor']> | undefined;
  new Gauge({
    name: 'bmaas_nodes',
    help: 'Nodes by provision state and by the conductor that prepared them (conductor_affinity; none when none did), counted from the database at scrape time.',
    labelNames: ['provision_state', 'conductor'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      counting ??= nodes.countByStateAndConductor().finally(() => {
        counting = undefined;
      });
      try {
        for (const row of await counting) {
          this.set({ provision_state: row.provisionState, conductor: row.conductor ?? 'none' }, row.count);
        }
      } catch (error) {
        logger.warn('could not count nodes for the metrics scrape', { error: (error as Error).message });
      }
    },
  });
}
