import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downgradeSchema, migrationSource, schemaVersion, upgradeSchema } from './index.js';

const ALL = [
  '20261130000000_initial_schema',
  '20261201000000_node_api_parity',
  '20261201000100_resources',
  '20261201000200_deploy_clean_steps',
  '20261201000300_inspection',
  '20261201000500_boot_path_changes',
  '20261202000000_nodes_hot_updates',
  '20261204000000_api_1_97_to_1_115',
  '20261204000100_inspection_rules',
  '20261205000000_allocation_conductor_affinity',
  '20261205000200_bios_firmware',
];
const LATEST = (ALL.at(-1) as string).slice(0, 14);

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
  const columns = async (table: string) =>
    (
      await t.db.raw<{ rows: { column_name: string }[] }>(
        'select column_name from information_schema.columns where table_name = ? order by 1',
        [table],
      )
    ).rows.map((r) => r.column_name);
  /** Takes the newest migrations back one by one until `version` is the schema's. */
  const downTo = async (version: string) => {
    while ((await schemaVersion(t.db)) !== version) {
      await t.db.migrate.down({ migrationSource, tableName: 'bmaas_migrations' });
    }
  };
  const applied = (from: string) => ALL.filter((name) => name.slice(0, 14) > from);

  it('go up, down and up again', async () => {
    expect(await schemaVersion(t.db)).toBeNull();
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await tables()).toEqual([
      'allocations',
      'bios_settings',
      'boot_path_changes',
      'chassis',
      'conductor_hardware_interfaces',
      'conductors',
      'deploy_templates',
      'firmware_information',
      'inspection_rules',
      'node_history',
      'node_inventory',
      'node_traits',
      'nodes',
      'portgroups',
      'ports',
      'runbook_traits',
      'runbooks',
      'volume_connectors',
      'volume_targets',
    ]);
    expect(await columns('nodes')).toEqual(
      expect.arrayContaining([
        'chassis_uuid',
        'allocation_uuid',
        'fault',
        'deploy_step',
        'clean_step',
        'inspection_started_at',
        'inspection_finished_at',
      ]),
    );
    expect(await columns('ports')).toEqual(
      expect.arrayContaining(['portgroup_uuid', 'is_smartnic', 'description', 'available_for_dynamic_portgroup']),
    );
    expect(await columns('node_history')).toEqual(
      expect.arrayContaining(['project', 'state', 'target_provision_state', 'duration_seconds']),
    );
    expect(await upgradeSchema(t.db)).toEqual([]);
    expect(await downgradeSchema(t.db)).toEqual([...ALL].reverse());
    expect(await tables()).toEqual([]);
    expect(await upgradeSchema(t.db)).toEqual(ALL);
    expect(await schemaVersion(t.db)).toBe(LATEST);
  });

  it('take the resources back down on their own, leaving nodes and ports as they were', async () => {
    const node = { uuid: crypto.randomUUID(), driver: 'fake-hardware', boot_interface: 'fake' };
    const [{ id }] = await t
      .db('nodes')
      .insert({ ...node, deploy_interface: 'fake', power_interface: 'fake', management_interface: 'fake' })
      .returning('id');
    await t.db('ports').insert({ uuid: crypto.randomUUID(), address: '52:54:00:00:00:01', node_id: id });
    await downTo('20261201000000');
    expect(await columns('nodes')).not.toContain('chassis_uuid');
    expect(await columns('ports')).not.toContain('portgroup_uuid');
    expect(await t.db('ports').select('address')).toEqual([{ address: '52:54:00:00:00:01' }]);
    expect(await upgradeSchema(t.db)).toEqual(applied('20261201000000'));
  });

  it('the node parity migration keeps existing nodes and goes down to the initial schema', async () => {
    const [node] = await t.db('nodes').select('raid_interface', 'network_interface', 'protected', 'network_data');
    expect(node).toEqual({ raid_interface: 'no-raid', network_interface: 'noop', protected: false, network_data: {} });
    await t.db('node_traits').insert({ node_id: t.db('nodes').select('id').limit(1), trait: 'CUSTOM_A' });
    await downTo('20261130000000');
    expect(await tables()).not.toContain('node_traits');
    expect(await columns('nodes')).not.toContain('owner');
    expect(Number((await t.db('nodes').count('* as n'))[0]?.n)).toBe(1);
    expect(await upgradeSchema(t.db)).toEqual(applied('20261130000000'));
  });
});
