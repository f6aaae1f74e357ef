import type { Logger, NodeRecord } from '@bmaas/common';

/**
 * Where the conductor reports what happened to a node outside any request:
 * the seam for a node history (Ironic's node history table). Until that
 * exists, events are log lines.
 */
export interface NodeEventRecorder {
  /** The hardware reports a power state the service did not set (someone used the BMC or the power button). */
  powerStateChangedOutside(node: NodeRecord, from: string | null, to: string): Promise<void>;
  /** The power state could not be read [conductor]power_state_sync_max_retries times: the node went to maintenance. */
  powerFailure(node: NodeRecord, error: string): Promise<void>;
  /** The BMC of a node in maintenance for a power failure answers again: maintenance cleared. */
  powerRecovered(node: NodeRecord, powerState: string): Promise<void>;
}

/** The recorder of today: one log line per event. */
export function loggingNodeEvents(logger: Logger): NodeEventRecorder {
  return {
    async powerStateChangedOutside(node, from, to) {
      logger.warn('power state changed outside the service', { nodeUuid: node.uuid, from, to });
    },
    async powerFailure(node, error) {
      logger.error('power state unreadable: node put in maintenance', { nodeUuid: node.uuid, error });
    },
    async powerRecovered(node, powerState) {
      logger.info('power failure recovered: maintenance cleared', { nodeUuid: node.uuid, powerState });
    },
  };
}
