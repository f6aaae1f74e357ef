import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainPlan } from '../testing/query-plan.js';
import { BOOT_LOOKUP_SQL, PortStore } from './port-store.js';

const NODES = 100_000;

describe('boot path query (MAC -> node) on 100k ports', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    // Bulk-load in SQL: 100k nodes with one port each.
    await t.db.raw(`
      insert into nodes (uuid, driver, boot_interface, deploy_interface, power_interface, management_interface, provision_state)
      select gen_random_uuid(), 'fake-hardware', 'ipxe', 'direct', 'fake', 'fake',
             case when i % 2 = 0 then 'wait call-back' else 'active' end
      from generate_series(1, ${NODES}) as i`);
    await t.db.raw(`
      insert into ports (uuid, address, node_id)
      select gen_random_uuid(), '52:54:' || lpad(to_hex((id >> 24) & 255), 2, '0') || ':' || lpad(to_hex((id >> 16) & 255), 2, '0')
             || ':' || lpad(to_hex((id >> 8) & 255), 2, '0') || ':' || lpad(to_hex(id & 255), 2, '0'), id
      from nodes`);
    await t.db.raw('analyze nodes; analyze ports');
  }, 120_000);
  afterAll(() => t.drop());

  it('is one statement using the unique MAC index and the node primary key, never a sequential scan', async () => {
    const address = '52:54:00:01:86:a0'; // node id 100000
    const nodes = await explainPlan(t.db, BOOT_LOOKUP_SQL, [address]);
    const types = nodes.map((n) => n['Node Type']);
    expect(types).not.toContain('Seq Scan');
    const indexes = nodes.filter((n) => n['Index Name']).map((n) => n['Index Name']);
    expect(indexes).toContain('ports_address_unique');
    expect(indexes).toContain('nodes_pkey');
    const found = await new PortStore(t.db).bootLookup(address);
    expect(found?.nodeId).toBe(100_000);
  });
});
