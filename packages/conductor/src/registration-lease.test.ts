import { ConductorFenced, createSilentLogger, waitFor } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistrationLease } from './registration-lease.js';
import { DriverRegistry } from './registry/driver-registry.js';
import { DRIVER_CATALOG } from './registry/enabled-interfaces.js';
import { TaskManager } from './task-manager.js';
import { testConfig } from './testing/fixtures.js';

let database: TestDatabase;
let stores: Stores;
const config = testConfig();
const registry = DriverRegistry.create(DRIVER_CATALOG, {
  config,
  logger: createSilentLogger(),
  conductorHostname: 'test',
});

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
});
afterAll(async () => {
  await database?.drop();
});

function leaseAt(clock: { now: number }): RegistrationLease {
  return new RegistrationLease({
    hostname: 'c1',
    timeoutMs: 4000,
    logger: createSilentLogger(),
    clock: () => clock.now,
  });
}

describe('RegistrationLease', () => {
  it('counts from when the renewal was sent, lapses after the timeout and starts a new epoch', async () => {
    const clock = { now: 1000 };
    const lease = leaseAt(clock);
    expect(lease.fenced).toBe(false);
    // A renewal that took 1.5 s: the lease runs from its start.
    await lease.renew(async () => {
      clock.now += 1500;
    });
    const epoch = lease.epoch;
    clock.now = 1000 + 4000;
    expect(() => lease.guard(epoch)).not.toThrow();
    clock.now = 1000 + 4001;
    expect(lease.fenced).toBe(true);
    expect(() => lease.guard(lease.epoch)).toThrow(ConductorFenced);
    let rejoined = false;
    await lease.renew(
      async () => {},
      async () => {
        rejoined = true;
        expect(lease.fenced).toBe(true); // cleanup runs while still fenced
      },
    );
    expect(rejoined).toBe(true);
    expect(lease.fenced).toBe(false);
    // Work of the earlier epoch stays void; new work may act.
    expect(() => lease.guard(epoch)).toThrow(ConductorFenced);
    expect(() => lease.guard(lease.epoch)).not.toThrow();
  });

  it('voids work begun before a lapse even when no one looked during the lapse', async () => {
    const clock = { now: 0 };
    const lease = leaseAt(clock);
    await lease.renew(async () => {});
    const epoch = lease.epoch;
    clock.now = 10_000;
    await lease.renew(async () => {});
    expect(() => lease.guard(epoch)).toThrow(ConductorFenced);
  });

  it('notices the lapse by itself, also when its timer fires before the clock says the lease ran out', async () => {
    const fenceLines: string[] = [];
    const logger = createSilentLogger();
    logger.error = ((message: string) => {
      fenceLines.push(message);
      return logger;
    }) as typeof logger.error;
    // The lease's clock runs 30 ms behind the timers once renewed: the first timer fires early.
    let behind = 0;
    const lease = new RegistrationLease({
      hostname: 'c1',
      timeoutMs: 50,
      logger,
      clock: () => performance.now() - behind,
    });
    await lease.renew(async () => {});
    behind = 30;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(fenceLines).toEqual([]);
    // Nothing asks the lease meanwhile: only its own timer can notice.
    await waitFor('the fence line', async () => (fenceLines.length > 0 ? true : undefined), {
      timeoutMs: 2000,
      intervalMs: 5,
    });
    expect(fenceLines).toEqual(['registration not renewed within heartbeat_timeout: fenced, acting on no node']);
    lease.close();
  });
});

describe('TaskManager under a lapsed lease', () => {
  it('takes no lock, writes nothing, calls no driver and leaves the release to the rejoin', async () => {
    const clock = { now: 0 };
    const lease = leaseAt(clock);
    await lease.renew(async () => {});
    const tasks = new TaskManager({
      nodes: stores.nodes,
      nodeLocks: stores.nodeLocks,
      ports: stores.ports,
      driverFor: (node) => registry.driverFor(node),
      hostname: 'c1',
      conductorId: () => 7,
      lockRetry: { attempts: 1, intervalMs: 10 },
      logger: createSilentLogger(),
      lease,
    });
    const held = await createNode(stores);
    const other = await createNode(stores);
    const task = await tasks.acquire(held.uuid, { purpose: 'test' });
    expect((await stores.nodes.getById(held.id))?.reservation).toBe('c1');

    clock.now = 5000; // lapsed
    await expect(tasks.acquire(other.uuid, { purpose: 'test' })).rejects.toBeInstanceOf(ConductorFenced);
    await expect(
      tasks.withTask(other.uuid, { purpose: 'test', lockWithFirstWrite: true }, async () => 1),
    ).rejects.toBeInstanceOf(ConductorFenced);
    await expect(task.updateNode({ extra: { fenced: true } })).rejects.toBeInstanceOf(ConductorFenced);
    await expect((async () => task.driver.power.setPowerState(task, 'power on'))()).rejects.toBeInstanceOf(
      ConductorFenced,
    );
    expect((await stores.nodes.getById(held.id))?.extra).toEqual(held.extra);

    // Renewed: the old task stays void; its release writes nothing (the rejoin cleans its lock up).
    await lease.renew(async () => {});
    await expect(task.updateNode({ extra: { fenced: true } })).rejects.toBeInstanceOf(ConductorFenced);
    await task.release();
    expect((await stores.nodes.getById(held.id))?.reservation).toBe('c1');
    // New work acts again.
    await tasks.withTask(other.uuid, { purpose: 'test' }, (t) => t.updateNode({ extra: { after: true } }));
    expect((await stores.nodes.getById(other.id))?.extra).toEqual({ after: true });
  });
});
