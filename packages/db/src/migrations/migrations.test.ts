import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downgradeSchema, schemaVersion, upgradeSchema } from './index.js';

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
    expect(await upgradeSchema(t.db)).toEqual(['20261130000000_initial_schema', '20261201000000_inspection']);
    expect(await tables()).toEqual(['conductor_hardware_interfaces', 'conductors', 'node_inventory', 'nodes', 'ports']);
    expect(await upgradeSchema(t.db)).toEqual([]);
    expect(await downgradeSchema(t.db)).toEqual(['20261201000000_inspection', '20261130000000_initial_schema']);
    expect(await tables()).toEqual([]);
    expect(await upgradeSchema(t.db)).toEqual(['20261130000000_initial_schema', '20261201000000_inspection']);
    expect(await schemaVersion(t.db)).toBe('20261201000000');
  });
});
