import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downgradeSchema, migrationSource, schemaVersion, upgradeSchema } from './index.js';

describe('migrations', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
  });
  afterAll(() => t.drop());

  const tables = async () =>
    (
      await t.db.raw<{ rows: { tablename: string }[] }>(
        "select tablename from pg_tables where schemaname = 'public' and tablename not like 'bmaas_migrations%' order by 1",
      )
    ).rows.map((r) => r.tablename);

  const ALL = ['20261130000000_initial_schema', '20261201000000_resources'];
  const columns = async (table: string) =>
    (
      await t.db.raw<{ rows: { column_name: string }[] }>(
        'select column_name from information_schema.columns where table_name = ? order by 1',
        [table],
      )
    ).rows.map((r) => r.column_name);

  it('go up, down and up again', async () => {
    expect(await schemaVersion(t.db)).toBeNull();
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await tables()).toEqual([
      'allocations',
      'chassis',
      'conductor_hardware_interfaces',
      'conductors',
      'deploy_templates',
      'nodes',
      'portgroups',
      'ports',
      'runbooks',
      'volume_connectors',
      'volume_targets',
    ]);
    expect(await columns('nodes')).toEqual(expect.arrayContaining(['chassis_uuid', 'allocation_uuid']));
    expect(await columns('ports')).toEqual(expect.arrayContaining(['portgroup_uuid', 'is_smartnic']));
    expect(await upgradeSchema(t.db)).toEqual([]);
    expect(await downgradeSchema(t.db)).toEqual([...ALL].reverse());
    expect(await tables()).toEqual([]);
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await schemaVersion(t.db)).toBe('20261201000000');
  });

  it('take the resources back down on their own, leaving nodes and ports as they were', async () => {
    const node = { uuid: crypto.randomUUID(), driver: 'fake-hardware', boot_interface: 'fake' };
    const [{ id }] = await t
      .db('nodes')
      .insert({ ...node, deploy_interface: 'fake', power_interface: 'fake', management_interface: 'fake' })
      .returning('id');
    await t.db('ports').insert({ uuid: crypto.randomUUID(), address: '52:54:00:00:00:01', node_id: id });
    await t.db.migrate.down({ migrationSource, tableName: 'bmaas_migrations' });
    expect(await schemaVersion(t.db)).toBe('20261130000000');
    expect(await columns('nodes')).not.toContain('chassis_uuid');
    expect(await columns('ports')).not.toContain('portgroup_uuid');
    expect(await t.db('ports').select('address')).toEqual([{ address: '52:54:00:00:00:01' }]);
    expect(await upgradeSchema(t.db)).toEqual(['20261201000000_resources']);
  });
});
