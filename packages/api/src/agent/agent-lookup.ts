import {
  LOOKUP_STATES,
  type Logger,
  MissingParameterValue,
  type NodeRecord,
  ResourceNotFound,
  tryParseMac,
} from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import type { AgentLookupNode, ConductorClient } from '@bmaas/rpc-client';

/** driver_internal_info key of the issued token (written by the owning conductor). */
const AGENT_TOKEN_KEY = 'agent_secret_token';
const MASKED = '******';

/** Why a lookup was refused: logged, never shown (every refusal is the same 404). */
export type LookupRefusal = 'unknown-node' | 'several-nodes' | 'state-not-allowed';

export interface AgentLookupDeps {
  stores: Pick<Stores, 'nodes' | 'ports'>;
  conductors: ConductorClient;
  /** [api]restrict_lookup: only nodes in a lookup state. */
  restrictToLookupStates: boolean;
}

export interface LookupRequest {
  /** The `addresses` query parameter, comma-separated MACs (the agent's NICs). */
  addresses: string[];
  /** The `node_uuid` query parameter, already checked to be a UUID. */
  nodeUuid: string | undefined;
  requestId: string;
  logger: Logger;
}

/**
 * `GET /v1/lookup`: which node is this agent running on, and its token.
 * As upstream: a node_uuid wins over the addresses; MACs that are not MACs
 * are ignored (with a warning); every miss is one indistinguishable 404.
 * The token is issued by the owning conductor on the first lookup of a boot;
 * once it is stored, lookups are answered here without a conductor call.
 */
export class AgentLookup {
  constructor(private readonly deps: AgentLookupDeps) {}

  async lookup(request: LookupRequest): Promise<AgentLookupNode> {
    const macs: string[] = [];
    const ignored: string[] = [];
    for (const address of request.addresses) {
      // The query was decoded once already: a `%` left means an address encoded twice.
      const mac = address.includes('%') ? undefined : tryParseMac(address);
      if (mac === undefined) ignored.push(address);
      else macs.push(mac);
    }
    if (ignored.length > 0) {
      request.logger.warn('lookup: addresses that are not MACs ignored', { addresses: ignored.slice(0, 16) });
    }
    if (macs.length === 0 && !request.nodeUuid) {
      throw new MissingParameterValue("At least one of 'addresses' and 'node_uuid' parameters is required");
    }

    const node = request.nodeUuid
      ? await this.deps.stores.nodes.getByUuid(request.nodeUuid.toLowerCase())
      : await this.nodeOwning(macs, request);
    if (!node) throw refused(request, 'unknown-node', { detail: request.nodeUuid ?? macs.join(',') });
    if (this.deps.restrictToLookupStates && !LOOKUP_STATES.has(node.provisionState as never)) {
      throw refused(request, 'state-not-allowed', { nodeUuid: node.uuid, detail: node.provisionState });
    }
    if (hasToken(node)) return lookupNode(node, MASKED);
    return this.deps.conductors.callForNode(
      node,
      'get_node_with_token',
      { node_id: node.uuid },
      { requestId: request.requestId },
    );
  }

  /** The one node the MACs belong to; several nodes is a miss, as upstream. */
  private async nodeOwning(macs: string[], request: LookupRequest): Promise<NodeRecord | undefined> {
    const ports = await this.deps.stores.ports.listByAddresses(macs);
    const nodeIds = new Set(ports.map((port) => port.nodeId));
    if (nodeIds.size > 1) {
      throw refused(request, 'several-nodes', { detail: [...new Set(ports.map((p) => p.nodeUuid))].join(',') });
    }
    const [nodeId] = nodeIds;
    return nodeId === undefined ? undefined : this.deps.stores.nodes.getById(nodeId);
  }
}

function hasToken(node: NodeRecord): boolean {
  const token = node.driverInternalInfo[AGENT_TOKEN_KEY];
  return typeof token === 'string' && token !== '';
}

function lookupNode(node: NodeRecord, token: string): AgentLookupNode {
  return {
    uuid: node.uuid,
    properties: node.properties,
    instance_info: node.instanceInfo,
    driver_internal_info: node.driverInternalInfo,
    agent_token: token,
  };
}

/** Logs why, then gives the one answer every refusal gets. */
function refused(
  request: LookupRequest,
  reason: LookupRefusal,
  facts: { nodeUuid?: string; detail?: string },
): ResourceNotFound {
  request.logger.info(`agent lookup refused: ${reason}`, { reason, ...facts });
  return new ResourceNotFound();
}
