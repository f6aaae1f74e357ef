import {
  type InspectionData,
  type Logger,
  type NodeRecord,
  ProvisionState,
  ResourceNotFound,
  tryParseMac,
} from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import type { ConductorClient } from '@bmaas/rpc-client';
import type { NodeDiscovery } from '../discovery/node-discovery.js';

export interface ContinueInspectionDeps {
  stores: Pick<Stores, 'nodes' | 'ports'>;
  conductors: ConductorClient;
  /** Creates a node for an unknown machine ([discovery]enabled), or is absent. */
  discovery?: Pick<NodeDiscovery, 'enrol'> | undefined;
}

/**
 * `POST /v1/continue_inspection`: which node posted this inventory, then
 * hand it to the node's conductor. The node is found by the MACs of the
 * inventory's interfaces (ports); it must be in `inspect wait`. An unknown
 * machine is enrolled when discovery is on. Every refusal is the same 404,
 * as for lookup; the log says why.
 */
export class ContinueInspection {
  constructor(private readonly deps: ContinueInspectionDeps) {}

  async accept(data: InspectionData, request: { requestId: string; logger: Logger }): Promise<NodeRecord> {
    const macs = [
      ...new Set(
        data.inventory.interfaces
          .map((nic) => (typeof nic.mac_address === 'string' ? tryParseMac(nic.mac_address) : undefined))
          .filter((mac): mac is string => mac !== undefined),
      ),
    ];
    const ports = await this.deps.stores.ports.listByAddresses(macs);
    const nodeIds = [...new Set(ports.map((port) => port.nodeId))];
    if (nodeIds.length > 1) throw refused(request.logger, 'several-nodes', macs);
    let node = nodeIds[0] === undefined ? undefined : await this.deps.stores.nodes.getById(nodeIds[0]);
    let discovered = false;
    if (!node) {
      if (!this.deps.discovery) throw refused(request.logger, 'unknown-node', macs);
      // Another post of the same machine may have enrolled it a moment ago: then it is a known node.
      ({ node, created: discovered } = await this.deps.discovery.enrol(data, request.logger));
    }
    if (!discovered && node.provisionState !== ProvisionState.INSPECT_WAIT) {
      throw refused(request.logger, 'state-not-allowed', macs, node);
    }
    await this.deps.conductors.callForNode(
      node,
      'continue_inspection',
      { node_id: node.uuid, inventory: data.inventory, plugin_data: data.pluginData },
      { requestId: request.requestId },
    );
    return node;
  }
}

function refused(logger: Logger, reason: string, macs: string[], node?: NodeRecord): ResourceNotFound {
  logger.info(`continue inspection refused: ${reason}`, {
    reason,
    nodeUuid: node?.uuid,
    detail: node ? node.provisionState : macs.join(','),
  });
  return new ResourceNotFound();
}
