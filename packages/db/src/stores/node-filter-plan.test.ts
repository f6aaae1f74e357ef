import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainPlan } from '../testing/query-plan.js';
import { NodeStore } from './node-store.js';

const NODES = 50_000;

describe('node list filters added for the API parity (EXPLAIN on 50k nodes)', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    // A few owners, lessees and shards, and one node in a thousand a child: selective filters, as in a real fleet.
    await t.db.raw(`
      insert into nodes (uuid, driver, boot_interface, deploy_interface, power_interface, management_interface,
                         owner, lessee, shard, parent_node)
      select gen_random_uuid(), 'fake-hardware', 'fake', 'fake', 'fake', 'fake',
             'project-' || (i % 500), case when i % 7 = 0 then 'tenant-' || (i % 300) end,
             'shard-' || (i % 200), case when i % 1000 = 0 then gen_random_uuid() end
      from generate_series(1, ${NODES}) as i`);
    await t.db.raw('analyze nodes');
  }, 120_000);
  afterAll(() => t.drop());

  it.each([
    [{ owner: 'project-7' }, 'nodes_owner_index'],
    [{ lessee: 'tenant-7' }, 'nodes_lessee_index'],
    [{ shards: ['shard-3'] }, 'nodes_shard_index'],
    [{ parentNode: '11111111-2222-4333-8444-555555555555' }, 'nodes_parent_node_index'],
  ])('%j uses %s, never a sequential scan', async (query, index) => {
    const sql = new NodeStore(t.db).listQuery({ limit: 100, sortKey: 'id', sortDir: 'asc', ...query }).toString();
    const plan = await explainPlan(t.db, sql);
    expect(plan.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    expect(plan.map((n) => n['Index Name'])).toContain(index);
  });
});
