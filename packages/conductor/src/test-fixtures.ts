import { randomUUID } from 'node:crypto';
import type { BmaasConfig, DeepPartial, NodeRecord } from '@bmaas/common';
import type { NewNode, Stores } from '@bmaas/db';
import { loadConductorConfig } from './registry/plugin-config.js';

/** Configuration for tests: no environment, fake boot only (the iPXE one is not in the catalog yet). */
export function testConfig(overrides: DeepPartial<BmaasConfig> = {}): BmaasConfig {
  return loadConductorConfig({
    env: {},
    overrides: {
      ...overrides,
      DEFAULT: { host: 'conductor-test', enabled_boot_interfaces: ['fake'], ...overrides.DEFAULT },
      conductor: { node_locked_retry_attempts: 1, node_locked_retry_interval: 0.01, ...overrides.conductor },
    },
  });
}

/** A fake-hardware node in the given state, inserted through the store. */
export async function createNode(
  stores: Stores,
  fields: Partial<NewNode> = {},
  state: Partial<NodeRecord> = {},
): Promise<NodeRecord> {
  const node = await stores.nodes.create({
    uuid: randomUUID(),
    driver: 'fake-hardware',
    bootInterface: 'fake',
    deployInterface: 'fake',
    powerInterface: 'fake',
    managementInterface: 'fake',
    inspectInterface: 'fake',
    ...fields,
  });
  if (Object.keys(state).length === 0) return node;
  return (await stores.nodes.update(node.id, state)) as NodeRecord;
}
