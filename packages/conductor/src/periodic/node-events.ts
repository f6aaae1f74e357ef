import type { Logger, NodeRecord } from '@bmaas/common';
import type { HistoryEvent } from '../history/node-history-writer.js';

/**
 * Where the conductor reports what happened to a node outside any request
 * (the power state sync): a log line and an entry of the node's history.
 */
export interface NodeEventRecorder {
  /** The hardware reports a power state the service did not set (someone used the BMC or the power button). */
  powerStateChangedOutside(node: NodeRecord, from: string | null, to: string): Promise<void>;
  /** The power state could not be read [conductor]power_state_sync_max_retries times: the node went to maintenance. */
  powerFailure(node: NodeRecord, error: string): Promise<void>;
  /** The BMC of a node in maintenance for a power failure answers again: maintenance cleared. */
  powerRecovered(node: NodeRecord, powerState: string | null): Promise<void>;
}

/** Each event as one log line and one node history entry (type "power"). */
export function recordedNodeEvents(logger: Logger, history: { record(event: HistoryEvent): void }): NodeEventRecorder {
  const power = (node: NodeRecord, severity: 'info' | 'warning' | 'error', event: string) =>
    history.record({ nodeId: node.id, eventType: 'power', severity, event });
  return {
    async powerStateChangedOutside(node, from, to) {
      logger.warn('power state changed outside the service', { nodeUuid: node.uuid, from, to });
      power(node, 'warning', `Power state changed outside the service from "${from}" to "${to}".`);
    },
    async powerFailure(node, error) {
      logger.error('power state unreadable: node put in maintenance', { nodeUuid: node.uuid, error });
      power(node, 'error', `Power state unreadable, node put in maintenance (fault "power failure"): ${error}`);
    },
    async powerRecovered(node, powerState) {
      logger.info('power failure recovered: maintenance cleared', { nodeUuid: node.uuid, powerState });
      power(node, 'info', `Power state readable again ("${powerState}"): maintenance and fault cleared.`);
    },
  };
}
