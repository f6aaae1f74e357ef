import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger, freePort, type NodeRecord, Registry } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Conductor, createConductor } from '../conductor.js';
import { ConductorMetrics } from '../metrics/conductor-metrics.js';
import { testConfig } from '../testing/fixtures.js';

describe('power state sync: node health (1.109) from the management interface', () => {
  let database: TestDatabase;
  let stores: Stores;
  let tmp: string;
  let conductor: Conductor;

  beforeAll(async () => {
    database = await createTestDatabase();
    stores = createStores(database.db);
    tmp = mkdtempSync(join(tmpdir(), 'bmaas-power-sync-'));
    conductor = createConductor({
      metrics: new ConductorMetrics(new Registry()),
      config: testConfig({
        DEFAULT: { host: '127.0.0.1', enabled_management_interfaces: ['fake', 'noop'] },
        json_rpc: { host_ip: '127.0.0.1', port: await freePort() },
        deploy: { http_root: tmp },
        conductor: { sync_power_state_interval: 0.2 },
      }),
      stores,
      logger: createSilentLogger(),
    });
    await conductor.start();
  });
  afterAll(async () => {
    await conductor?.stop();
    await database?.drop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const reload = async (node: NodeRecord) => (await stores.nodes.getById(node.id)) as NodeRecord;

  it('records what the BMC reports, only when it changes, leaving updated_at alone', async () => {
    const node = await createNode(
      stores,
      { driverInfo: { fake_health: 'Warning' } },
      { provisionState: 'available', powerState: 'power off' },
    );
    await expect.poll(async () => (await reload(node)).health, { timeout: 10_000 }).toBe('Warning');
    const updatedAt = (await reload(node)).updatedAt;

    await stores.nodes.update(node.id, { driverInfo: { fake_health: 'Critical' } });
    await expect.poll(async () => (await reload(node)).health, { timeout: 10_000 }).toBe('Critical');
    await stores.nodes.update(node.id, { driverInfo: {} });
    await expect.poll(async () => (await reload(node)).health, { timeout: 10_000 }).toBe('OK');
    expect((await reload(node)).updatedAt?.getTime()).toBeGreaterThan(updatedAt?.getTime() ?? 0);
    // The health write itself does not touch updated_at: the last edit was the driver_info one.
    const edited = (await reload(node)).updatedAt;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await reload(node)).updatedAt).toEqual(edited);
  });

  it('leaves the health as it was when the read fails, and null where the interface has no getHealth', async () => {
    const bad = await createNode(
      stores,
      { driverInfo: { fake_health: 'Nonsense' } },
      { provisionState: 'available', powerState: 'power off', health: 'OK' },
    );
    const noop = await createNode(
      stores,
      { managementInterface: 'noop', driverInfo: { fake_health: 'Critical' } },
      { provisionState: 'available', powerState: 'power off' },
    );
    const witness = await createNode(
      stores,
      { driverInfo: { fake_health: 'Critical' } },
      { provisionState: 'available', powerState: 'power off' },
    );
    // Once a node of the same run shows its health, the sync has passed these too.
    await expect.poll(async () => (await reload(witness)).health, { timeout: 10_000 }).toBe('Critical');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await reload(bad)).health).toBe('OK');
    expect((await reload(noop)).health).toBeNull();
  });
});
