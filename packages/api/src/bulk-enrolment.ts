import { InvalidParameterValue, isBmaasError, type NodeRecord, type PortRecord } from '@bmaas/common';
import type { NewNode, NewPort, Stores } from '@bmaas/db';
import type { NodeService } from './node-service.js';
import type { PortService } from './port-service.js';
import { compileSchema } from './validation.js';

export interface BulkEnrolmentDeps {
  nodes: NodeService;
  ports: PortService;
  stores: Stores;
  /** [api]bulk_enrolment_max_nodes. */
  maxNodes: number;
}

/** What one bulk enrolment created: each node with its ports, in the order of the request. */
export type EnrolledNode = { node: NodeRecord; ports: PortRecord[] };

const checkBulkBody = compileSchema<{ nodes: unknown[] }>('bulk enrolment', {
  type: 'object',
  properties: { nodes: { type: 'array', minItems: 1 } },
  required: ['nodes'],
  additionalProperties: false,
});

/**
 * POST /v1/nodes/bulk: many nodes, each with its ports, in one request and
 * one transaction. Every node is checked by NodeService.newNode and every
 * port by PortService.newPortOfNewNode, the very checks of POST /v1/nodes
 * and POST /v1/ports at the request's microversion; then all of them are
 * stored with multi-row inserts (NodeStore.createManyWithPorts), all or
 * nothing. A refusal is the error the single create gives, its message
 * prefixed with the item it is about (`nodes[17].ports[0]: …`).
 */
export class BulkEnrolment {
  constructor(private readonly deps: BulkEnrolmentDeps) {}

  async enrol(body: unknown, minor: number): Promise<EnrolledNode[]> {
    const { nodes } = checkBulkBody(body);
    if (nodes.length > this.deps.maxNodes) {
      throw new InvalidParameterValue(
        `A bulk enrolment creates at most ${this.deps.maxNodes} nodes ([api]bulk_enrolment_max_nodes); this one lists ${nodes.length}: split the list.`,
      );
    }
    const items: Array<{ node: NewNode; ports: Array<Omit<NewPort, 'nodeId'>> }> = [];
    for (const [index, item] of nodes.entries()) items.push(await this.checked(item, index, minor));
    try {
      return await this.deps.stores.nodes.createManyWithPorts(items);
    } catch (error) {
      const details = isBmaasError(error) ? error.details : {};
      if (typeof details.node !== 'number') throw error;
      const port = typeof details.port === 'number' ? `.ports[${details.port}]` : '';
      throw about(`nodes[${details.node}]${port}`, error);
    }
  }

  /** One listed node and its ports, checked; errors name the item. */
  private async checked(
    item: unknown,
    index: number,
    minor: number,
  ): Promise<{ node: NewNode; ports: Array<Omit<NewPort, 'nodeId'>> }> {
    const { ports = [], ...nodeBody } = isObject(item) ? item : { ports: [] };
    const node = await atItem(`nodes[${index}]`, () =>
      this.deps.nodes.newNode(isObject(item) ? nodeBody : item, minor),
    );
    if (!Array.isArray(ports)) {
      throw about(`nodes[${index}]`, new InvalidParameterValue('ports must be a list of ports.'));
    }
    const newPorts: Array<Omit<NewPort, 'nodeId'>> = [];
    for (const [portIndex, port] of ports.entries()) {
      newPorts.push(
        await atItem(`nodes[${index}].ports[${portIndex}]`, () =>
          this.deps.ports.newPortOfNewNode(port, node.uuid, minor),
        ),
      );
    }
    return { node, ports: newPorts };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A domain error's message prefixed with the item it is about (same class, status and code). */
function about(item: string, error: unknown): unknown {
  if (isBmaasError(error)) error.message = `${item}: ${error.message}`;
  return error;
}

async function atItem<T>(item: string, check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    throw about(item, error);
  }
}
