import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downgradeSchema, migrationSource, schemaVersion, upgradeSchema } from './index.js';

const ALL = ['20261130000000_initial_schema', '20261201000000_node_api_parity'];

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

  it('go up, down and up again', async () => {
    expect(await schemaVersion(t.db)).toBeNull();
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await tables()).toEqual([
      'conductor_hardware_interfaces',
      'conductors',
      'node_history',
      'node_traits',
      'nodes',
      'ports',
    ]);
    expect(await upgradeSchema(t.db)).toEqual([]);
    expect(await downgradeSchema(t.db)).toEqual([...ALL].reverse());
    expect(await tables()).toEqual([]);
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await schemaVersion(t.db)).toBe('20261201000000');
  });

  it('the node parity migration keeps existing nodes and goes down to the initial schema', async () => {
    await t.db.raw(`insert into nodes (uuid, driver, boot_interface, deploy_interface, power_interface, management_interface)
      values ('11111111-2222-4333-8444-555555555555', 'fake-hardware', 'fake', 'fake', 'fake', 'fake')`);
    const [node] = await t.db('nodes').select('raid_interface', 'network_interface', 'protected', 'network_data');
    expect(node).toEqual({ raid_interface: 'no-raid', network_interface: 'noop', protected: false, network_data: {} });
    await t.db('node_traits').insert({ node_id: t.db('nodes').select('id').limit(1), trait: 'CUSTOM_A' });
    await t.db.migrate.down({ migrationSource, tableName: 'bmaas_migrations' });
    expect(await schemaVersion(t.db)).toBe('20261130000000');
    expect(await tables()).not.toContain('node_traits');
    const columns = Object.keys(await t.db('nodes').columnInfo());
    expect(columns).not.toContain('owner');
    expect(Number((await t.db('nodes').count('* as n'))[0]?.n)).toBe(1);
    expect(await upgradeSchema(t.db)).toEqual(['20261201000000_node_api_parity']);
  });
});
