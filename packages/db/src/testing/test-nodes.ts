import { randomUUID } from 'node:crypto';
import type { NodeRecord } from '@bmaas/common';
import type { Stores } from '../stores/index.js';
import type { NodeChanges } from '../stores/node-rows.js';
import type { NewNode } from '../stores/node-store.js';

/** A minimal valid new node for tests: fake-hardware with fake interfaces, a random uuid. */
export function newNode(overrides: Partial<NewNode> = {}): NewNode {
  return {
    uuid: randomUUID(),
    driver: 'fake-hardware',
    bootInterface: 'fake',
    deployInterface: 'fake',
    powerInterface: 'fake',
    managementInterface: 'fake',
    inspectInterface: 'fake',
    ...overrides,
  };
}

/** newNode(fields) inserted through the store, then given `state` (one update) when there is any. */
export async function createNode(
  stores: Pick<Stores, 'nodes'>,
  fields: Partial<NewNode> = {},
  state: NodeChanges = {},
): Promise<NodeRecord> {
  const node = await stores.nodes.create(newNode(fields));
  if (Object.keys(state).length === 0) return node;
  return (await stores.nodes.update(node.id, state)) as NodeRecord;
}
