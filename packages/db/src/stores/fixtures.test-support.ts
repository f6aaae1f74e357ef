import { randomUUID } from 'node:crypto';
import type { NewNode } from './node-store.js';

/** A minimal valid node for store tests. */
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
