import type { NodeRecord } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { ProvisioningRequest, ProvisioningRunner } from '../provisioning/runner.js';
import type { TaskManager } from '../task-manager.js';
import { fixtureRunner, fixtureTasks, testConfig } from './fixtures.js';

/** A runner over a fresh test database, with the fake and direct deploy interfaces enabled. */
export interface RunnerFixture {
  stores: Stores;
  tasks: TaskManager;
  runner: ProvisioningRunner;
  /** Fires an action, waits for its background work, returns the node as stored. */
  act(node: NodeRecord, event: string, request?: ProvisioningRequest): Promise<NodeRecord>;
  drop(): Promise<void>;
}

export async function startRunnerFixture(): Promise<RunnerFixture> {
  const database: TestDatabase = await createTestDatabase();
  const stores = createStores(database.db);
  const { tasks } = fixtureTasks(stores, testConfig({ DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] } }));
  const runner = fixtureRunner(stores, tasks);
  return {
    stores,
    tasks,
    runner,
    async act(node, event, request = {}) {
      await runner.doProvisioningAction(node.uuid, event, request);
      if (!(await tasks.drain(30_000))) throw new Error(`the ${event} of node ${node.uuid} did not finish in 30 s`);
      return (await stores.nodes.getById(node.id)) as NodeRecord;
    },
    drop: () => database.drop(),
  };
}
