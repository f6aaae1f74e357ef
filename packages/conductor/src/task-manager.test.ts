import { createSilentLogger, InvalidParameterValue, NodeLocked, NodeNotFound, type NodeRecord } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DriverRegistry } from './registry/driver-registry.js';
import { DRIVER_CATALOG } from './registry/enabled-interfaces.js';
import { TaskManager, type TaskManagerOptions } from './task-manager.js';
import { testConfig } from './testing/fixtures.js';

let database: TestDatabase;
let stores: Stores;
const config = testConfig();
const registry = DriverRegistry.create(DRIVER_CATALOG, {
  config,
  logger: createSilentLogger(),
  conductorHostname: 'test',
});

function managerOptions(
  hostname: string,
  lockRetry = { attempts: 1, intervalMs: 10 },
  conductorId = 7,
): TaskManagerOptions {
  return {
    nodes: stores.nodes,
    nodeLocks: stores.nodeLocks,
    ports: stores.ports,
    driverFor: (node) => registry.driverFor(node),
    hostname,
    conductorId: () => conductorId,
    lockRetry,
    logger: createSilentLogger(),
  };
}

function manager(
  hostname: string,
  lockRetry = { attempts: 1, intervalMs: 10 },
  conductorId = 7,
  observers: Pick<TaskManagerOptions, 'history' | 'provisionStates'> = {},
): TaskManager {
  return new TaskManager({ ...managerOptions(hostname, lockRetry, conductorId), ...observers });
}

async function reservationOf(node: NodeRecord): Promise<string | null | undefined> {
  return (await stores.nodes.getById(node.id))?.reservation;
}

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
});
afterAll(async () => {
  await database?.drop();
});

describe('TaskManager', () => {
  it('lets exactly one of many concurrent acquirers win the exclusive lock', async () => {
    const node = await createNode(stores);
    const managers = Array.from({ length: 16 }, (_, i) => manager(`conductor-${i}`));
    const started = performance.now();
    for (let round = 0; round < 5; round++) {
      const outcomes = await Promise.allSettled(
        managers.map((m) => m.acquire(node.uuid, { purpose: 'contention test' })),
      );
      const winners = outcomes.filter((o) => o.status === 'fulfilled');
      const losers = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(winners).toHaveLength(1);
      expect(losers.every((o) => o.reason instanceof NodeLocked)).toBe(true);
      const holder = await reservationOf(node);
      expect(holder).toMatch(/^conductor-\d+$/);
      expect(String(losers[0]?.reason)).toContain(`locked by host ${holder}`);
      const won = winners[0] as PromiseFulfilledResult<Awaited<ReturnType<TaskManager['acquire']>>>;
      await won.value.release();
      expect(await reservationOf(node)).toBeNull();
    }
    console.info(`16 concurrent acquirers: ${((performance.now() - started) / 5).toFixed(1)} ms per round`);
  });

  it('releases the lock when the work throws', async () => {
    const node = await createNode(stores);
    const tasks = manager('c1');
    await expect(
      tasks.withTask(node.uuid, { purpose: 'failing work' }, async (task) => {
        expect(await reservationOf(node)).toBe('c1');
        await task.updateNode({ lastError: 'half done' });
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    expect(await reservationOf(node)).toBeNull();
    expect(tasks.heldCount).toBe(0);
    expect((await stores.nodes.getById(node.id))?.lastError).toBe('half done');
  });

  it('retries a held lock and gets it once the holder lets go', async () => {
    const node = await createNode(stores);
    const holder = manager('holder');
    const waiter = manager('waiter', { attempts: 5, intervalMs: 50 });
    const held = await holder.acquire(node.uuid, { purpose: 'hold' });
    const waiting = waiter.withTask(node.uuid, { purpose: 'wait' }, async (task) => task.node.reservation);
    setTimeout(() => void held.release(), 80);
    expect(await waiting).toBe('waiter');
  });

  it('takes no reservation for a shared lock and refuses writes until upgraded', async () => {
    const node = await createNode(stores);
    const tasks = manager('c1');
    const other = manager('c2');
    await tasks.withTask(node.uuid, { shared: true, purpose: 'read' }, async (task) => {
      expect(task.shared).toBe(true);
      expect(await reservationOf(node)).toBeNull();
      await expect(task.updateNode({ lastError: 'x' })).rejects.toThrow(/needs the exclusive lock/);
      await task.upgradeLock();
      expect(task.shared).toBe(false);
      expect(await reservationOf(node)).toBe('c1');
      await expect(other.acquire(node.uuid, { purpose: 'steal' })).rejects.toBeInstanceOf(NodeLocked);
      await task.updateNode({ lastError: 'written after upgrade' });
    });
    expect(await reservationOf(node)).toBeNull();
  });

  it('builds a shared cached task from the node the cache holds, without a query, and still upgrades it', async () => {
    const node = await createNode(stores);
    const held = await stores.nodes.getByUuidWithPorts(node.uuid);
    if (!held) throw new Error('node not found');
    const frozen = Object.freeze({ node: Object.freeze({ ...held.node, lastError: 'as cached' }), ports: held.ports });
    let loads = 0;
    const nodeCache = {
      held: (uuid: string) => (uuid === node.uuid ? frozen : undefined),
      read: async (_uuid: string, load: () => Promise<unknown>) => {
        loads++;
        return load() as never;
      },
    };
    const tasks = new TaskManager({ ...managerOptions('c1'), nodeCache });
    const served = await tasks.withTask(node.uuid, { shared: true, cached: true, purpose: 'boot' }, async (task) => {
      expect(task.shared).toBe(true);
      return task.node;
    });
    expect(served).toBe(frozen.node);
    expect(loads).toBe(0);
    // Not cached: the usual read, through the cache's read().
    const read = await tasks.withTask(node.uuid, { shared: true, purpose: 'boot' }, async (task) => task.node);
    expect(read.lastError).toBeNull();
    // A node the cache does not hold goes through read() too.
    const other = await createNode(stores);
    await tasks.withTask(other.uuid, { shared: true, cached: true, purpose: 'boot' }, async () => undefined);
    expect(loads).toBe(1);
    // Upgraded from the cached node: locked, written, released as any task.
    await tasks.withTask(node.uuid, { shared: true, cached: true, purpose: 'boot' }, async (task) => {
      await task.upgradeLock();
      expect(await reservationOf(node)).toBe('c1');
      await task.updateNode({ lastError: 'written after upgrade' });
    });
    expect(await reservationOf(node)).toBeNull();
    expect((await stores.nodes.getById(node.id))?.lastError).toBe('written after upgrade');
  });

  it('fails an upgrade with NodeLocked when someone else holds the node', async () => {
    const node = await createNode(stores);
    const held = await manager('c2').acquire(node.uuid, { purpose: 'hold' });
    await manager('c1').withTask(node.uuid, { shared: true, purpose: 'read' }, async (task) => {
      await expect(task.upgradeLock()).rejects.toBeInstanceOf(NodeLocked);
    });
    expect(await reservationOf(node)).toBe('c2');
    await held.release();
  });

  it('keeps the lock for background work and releases it when the work ends', async () => {
    const node = await createNode(stores);
    const tasks = manager('c1');
    let finish: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const answer = await tasks.withTask(node.uuid, { purpose: 'spawn' }, async (task) => {
      task.spawnAfter(async (t) => {
        await gate;
        await t.updateNode({ lastError: 'background wrote this' });
      });
      return 'answered';
    });
    expect(answer).toBe('answered');
    expect(await reservationOf(node)).toBe('c1');
    finish();
    expect(await tasks.drain(30_000)).toBe(true);
    expect(await stores.nodes.getById(node.id)).toMatchObject({
      reservation: null,
      lastError: 'background wrote this',
    });
  });

  it('stops writes of abandoned work: its reservation is gone', async () => {
    const node = await createNode(stores, {}, { provisionState: 'deploying' });
    const tasks = manager('c1');
    const task = await tasks.acquire(node.uuid, { purpose: 'abandon' });
    expect(await tasks.abandonAll(() => ({ provisionState: 'deploy failed' }))).toBe(1);
    expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, provisionState: 'deploy failed' });
    await expect(task.updateNode({ provisionState: 'active' })).rejects.toThrow();
  });

  it('records this conductor as conductor_affinity when boot files are prepared', async () => {
    const node = await createNode(stores);
    await manager('c1', undefined, 42).withTask(node.uuid, { purpose: 'prepare' }, async (task) => {
      await task.driver.boot.prepareRamdisk(task, 'deploy');
    });
    expect(await stores.nodes.getById(node.id)).toMatchObject({
      conductorAffinity: 42,
      driverInternalInfo: { fake_boot: 'ramdisk:deploy' },
    });
  });

  it('writes conductor_affinity with the next write under the lock, or with the release', async () => {
    const node = await createNode(stores);
    await manager('c1', undefined, 43).withTask(node.uuid, { purpose: 'prepare' }, async (task) => {
      await task.driver.boot.prepareRamdisk(task, 'deploy');
      // The fake boot interface wrote its record; the affinity waits for the next write.
      expect((await stores.nodes.getById(node.id))?.conductorAffinity).toBeNull();
      await task.updateNode({ lastError: 'next write' });
      expect(await stores.nodes.getById(node.id)).toMatchObject({ conductorAffinity: 43, reservation: 'c1' });
    });
    const other = await createNode(stores);
    const c2 = manager('c2', undefined, 44);
    await c2.withTask(other.uuid, { purpose: 'prepare' }, async (task) => {
      task.spawnAfter(async (t) => {
        await t.driver.boot.prepareRamdisk(t, 'deploy');
      });
    });
    expect(await c2.drain(30_000)).toBe(true);
    expect(await stores.nodes.getById(other.id)).toMatchObject({ conductorAffinity: 44, reservation: null });
  });

  it('shows writeWithNext changes on task.node at once and writes them with the next write, then the release', async () => {
    const node = await createNode(stores, {}, { provisionState: 'deploying' });
    const states: string[] = [];
    const history: string[] = [];
    const tasks = manager('c1', undefined, undefined, {
      history: { record: (event) => history.push(event.event) },
      provisionStates: { provisionStateChanged: (_uuid, from, to) => states.push(`${from} -> ${to}`) },
    });
    await tasks.withTask(node.uuid, { purpose: 'deferred writes' }, async (task) => {
      await task.driver.power.setPowerState(task, 'power on');
      expect(task.node.powerState).toBe('power on');
      expect(await task.driver.power.getPowerState(task)).toBe('power on');
      expect((await stores.nodes.getById(node.id))?.powerState).toBeNull();
      await task.updateNode({ lastError: 'one statement with the power state' });
      expect(await stores.nodes.getById(node.id)).toMatchObject({
        powerState: 'power on',
        lastError: 'one statement with the power state',
      });
      task.writeWithNext({ provisionState: 'wait call-back' });
      expect(task.node.provisionState).toBe('wait call-back');
      expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'deploying', reservation: 'c1' });
      // History and state events follow the write that carries the change, not the call.
      expect(states).toEqual([]);
    });
    expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'wait call-back', reservation: null });
    expect(states).toEqual(['deploying -> wait call-back']);
    expect(history).toEqual([
      'one statement with the power state',
      'Provision state changed from "deploying" to "wait call-back".',
    ]);
  });

  it('keeps the history of each deferred state change when several go in one statement', async () => {
    const node = await createNode(stores, {}, { provisionState: 'deploying' });
    const states: string[] = [];
    const tasks = manager('c1', undefined, undefined, {
      provisionStates: { provisionStateChanged: (_uuid, from, to) => states.push(`${from} -> ${to}`) },
    });
    await tasks.withTask(node.uuid, { purpose: 'deferred then failed' }, async (task) => {
      task.writeWithNext({ provisionState: 'wait call-back' });
      await task.updateNode({ provisionState: 'deploy failed', lastError: 'boom' });
    });
    expect(states).toEqual(['deploying -> wait call-back', 'wait call-back -> deploy failed']);
    expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'deploy failed', reservation: null });
  });

  it('fails the work whose deferred writes find the lock lost at the release, and writes nothing', async () => {
    const node = await createNode(stores);
    const tasks = manager('c1');
    await expect(
      tasks.withTask(node.uuid, { purpose: 'lost lock' }, async (task) => {
        task.writeWithNext({ powerState: 'power on' });
        // Someone clears the reservation under us (an orphan cleanup, a stop).
        await stores.nodes.update(node.id, { reservation: null });
      }),
    ).rejects.toBeInstanceOf(NodeLocked);
    expect(await stores.nodes.getById(node.id)).toMatchObject({ powerState: null, reservation: null });
    expect(tasks.heldCount).toBe(0);
  });

  describe('a lock taken by the first write (lockWithFirstWrite)', () => {
    const FIRST_WRITE = { purpose: 'first write', lockWithFirstWrite: true } as const;

    /** Calls of the store's lock statements while `fn` runs. */
    async function lockStatements(fn: () => Promise<void>): Promise<Record<string, number>> {
      const names = ['reserveByUuidWithPorts', 'reserve', 'release', 'updateReservedBy', 'updateIfUnreservedVersion'];
      const spies = names.map((name) => vi.spyOn(stores.nodeLocks, name as 'reserve'));
      try {
        await fn();
        return Object.fromEntries(names.map((name, i) => [name, spies[i]?.mock.calls.length ?? 0]));
      } finally {
        for (const spy of spies) spy.mockRestore();
      }
    }

    it('takes the lock in the statement of the first write, and none before it', async () => {
      const node = await createNode(stores);
      const tasks = manager('c1');
      const calls = await lockStatements(async () => {
        await tasks.withTask(node.uuid, FIRST_WRITE, async (task) => {
          expect(await reservationOf(node)).toBeNull();
          expect(tasks.heldCount).toBe(0);
          await task.updateNode({ lastError: 'first write' });
          expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: 'c1', lastError: 'first write' });
          expect(tasks.heldCount).toBe(1);
          await task.updateNode({ lastError: 'second write' });
        });
      });
      expect(calls).toEqual({
        reserveByUuidWithPorts: 0,
        reserve: 0,
        updateIfUnreservedVersion: 1,
        updateReservedBy: 1,
        release: 1,
      });
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, lastError: 'second write' });
      expect(tasks.heldCount).toBe(0);
    });

    it('runs the work again on a lock taken first when the node changed between the read and the first write', async () => {
      const node = await createNode(stores, {}, { extra: { seen: 'before' } });
      const tasks = manager('c1');
      const runs: string[] = [];
      await tasks.withTask(node.uuid, FIRST_WRITE, async (task) => {
        runs.push(String(task.node.extra.seen));
        if (runs.length === 1) await stores.nodes.update(node.id, { extra: { seen: 'after' } });
        await task.updateNode({ lastError: `decided on ${String(task.node.extra.seen)}` });
      });
      expect(runs).toEqual(['before', 'after']);
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, lastError: 'decided on after' });
    });

    it('waits for a node locked by someone else as the usual lock does, then NodeLocked', async () => {
      const node = await createNode(stores);
      await stores.nodeLocks.reserve(node.id, 'other');
      let ran = false;
      await expect(
        manager('c1').withTask(node.uuid, FIRST_WRITE, async () => {
          ran = true;
        }),
      ).rejects.toBeInstanceOf(NodeLocked);
      expect(ran).toBe(false);
      const patient = manager('c1', { attempts: 50, intervalMs: 10 });
      setTimeout(() => void stores.nodeLocks.release(node.id, 'other'), 50);
      await patient.withTask(node.uuid, FIRST_WRITE, async (task) => {
        expect(await reservationOf(node)).toBe('c1');
        await task.updateNode({ lastError: 'after the wait' });
      });
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, lastError: 'after the wait' });
    });

    it('writes what is pending without ever locking when the task ends before writing; nothing when it throws', async () => {
      const node = await createNode(stores);
      const tasks = manager('c1');
      const calls = await lockStatements(async () => {
        await tasks.withTask(node.uuid, FIRST_WRITE, async (task) => {
          task.writeWithNext({ lastError: 'pending only' });
        });
      });
      expect(calls).toMatchObject({ updateIfUnreservedVersion: 1, release: 0, updateReservedBy: 0 });
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, lastError: 'pending only' });
      const refused = await lockStatements(async () => {
        await expect(
          tasks.withTask(node.uuid, FIRST_WRITE, async () => {
            throw new InvalidParameterValue('bad node');
          }),
        ).rejects.toBeInstanceOf(InvalidParameterValue);
      });
      expect(Object.values(refused).every((count) => count === 0)).toBe(true);
      expect(tasks.heldCount).toBe(0);
    });

    it('takes the lock before background work starts when the task has not written yet', async () => {
      const node = await createNode(stores);
      const tasks = manager('c1');
      let lockedInBackground: string | null | undefined;
      await tasks.withTask(node.uuid, FIRST_WRITE, async (task) => {
        task.spawnAfter(async (t) => {
          lockedInBackground = await reservationOf(node);
          await t.updateNode({ lastError: 'background' });
        });
      });
      expect(await tasks.drain(30_000)).toBe(true);
      expect(lockedInBackground).toBe('c1');
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, lastError: 'background' });
    });

    it('loses no update among concurrent tasks of several conductors on one node', async () => {
      const node = await createNode(stores, {}, { extra: { count: 0 } });
      const managers = ['c1', 'c2', 'c3'].map((host) => manager(host, { attempts: 200, intervalMs: 2 }));
      await Promise.all(
        managers.flatMap((tasks) =>
          Array.from({ length: 6 }, async () => {
            // Spread out, so that the lock is often free between a read and its write.
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 40));
            await tasks.withTask(node.uuid, FIRST_WRITE, async (task) => {
              const count = Number(task.node.extra.count);
              // Long enough for other tasks to lock, write and release meanwhile.
              await new Promise((resolve) => setTimeout(resolve, Math.random() * 8));
              await task.updateNode({ extra: { count: count + 1 } });
            });
          }),
        ),
      );
      expect(await stores.nodes.getById(node.id)).toMatchObject({ reservation: null, extra: { count: 18 } });
    });
  });

  it('refuses writeWithNext under a shared lock', async () => {
    const node = await createNode(stores);
    await manager('c1').withTask(node.uuid, { shared: true, purpose: 'read' }, async (task) => {
      expect(() => task.writeWithNext({ lastError: 'x' })).toThrow(/needs the exclusive lock/);
    });
    expect((await stores.nodes.getById(node.id))?.lastError).toBeNull();
  });

  it('answers NodeNotFound for an unknown node and releases when its interfaces are not enabled', async () => {
    await expect(
      manager('c1').acquire('00000000-0000-4000-8000-000000000000', { purpose: 'x' }),
    ).rejects.toBeInstanceOf(NodeNotFound);
    const node = await createNode(stores, { powerInterface: 'ipmitool' });
    await expect(manager('c1').acquire(node.uuid, { purpose: 'x' })).rejects.toThrow(/not enabled/);
    expect(await reservationOf(node)).toBeNull();
  });
});
