import { randomUUID } from 'node:crypto';
import { createSilentLogger, ProvisionState as S } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { ConductorRing } from '@bmaas/rpc-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ProvisioningRunner } from '../provisioning/runner.js';
import type { TaskManager } from '../task-manager.js';
import { testConfig } from '../testing/fixtures.js';
import type { NodeEventRecorder } from './node-events.js';
import { PowerStateSync, SYNC_TICKS_PER_INTERVAL } from './power-sync.js';

// The sync's scheduling on its own: which nodes a tick starts reading, when, and how many at
// once. The nodes and the listing are real (PostgreSQL); each reading is a task this test
// holds open and ends (the readings themselves are power-sync.test.ts's).

const INTERVAL_S = 60;
const WORKERS = 3;
const SELF = 'c1';
const OTHER = 'c2';

/** Readings the sync started, held open until the test ends them. */
class HeldReadings {
  readonly started: string[] = [];
  private readonly open = new Map<string, () => void>();
  maxInFlight = 0;

  readonly tasks = {
    withTask: async (uuid: string, _options: unknown, _fn: unknown): Promise<void> => {
      this.started.push(uuid);
      await new Promise<void>((resolve) => {
        this.open.set(uuid, resolve);
        this.maxInFlight = Math.max(this.maxInFlight, this.open.size);
      });
    },
  } as unknown as TaskManager;

  get inFlight(): string[] {
    return [...this.open.keys()];
  }

  /** Ends one open reading, then lets the sync see it end (and start the next one). */
  async endOne(uuid: string): Promise<void> {
    const end = this.open.get(uuid);
    if (!end) throw new Error(`no reading of ${uuid} is open`);
    this.open.delete(uuid);
    end();
    await settle();
  }

  /** Ends every open reading, then lets the sync see them end. */
  async endAll(): Promise<void> {
    for (;;) {
      await settle();
      if (this.open.size === 0) return;
      for (const [uuid, end] of this.open) {
        this.open.delete(uuid);
        end();
      }
    }
  }
}

/** Lets every promise chain that can move, move (the limiter's hand-overs, the ring's reads). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('power state sync: scheduling', () => {
  let database: TestDatabase;
  let stores: Stores;
  let mine: string[];
  let theirs: string[];

  beforeAll(async () => {
    database = await createTestDatabase();
    stores = createStores(database.db);
    const uuids: string[] = [];
    for (let i = 0; i < 24; i++) {
      uuids.push((await createNode(stores, {}, { provisionState: 'available', powerState: 'power off' })).uuid);
    }
    const ring = ringOf(() => [SELF, OTHER]);
    // Nodes the sync leaves alone, all on this conductor (so leaving them is what keeps them
    // unread): in maintenance, waiting for an agent or in a state no BMC is known in yet, or
    // changing power.
    const ownedUuid = async (): Promise<string> => {
      for (;;) {
        const uuid = randomUUID();
        if ((await ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: '' })) === SELF) return uuid;
      }
    };
    await createNode(stores, { uuid: await ownedUuid() }, { provisionState: S.AVAILABLE, maintenance: true });
    for (const provisionState of [S.DEPLOY_WAIT, S.CLEAN_WAIT, S.ENROLL]) {
      await createNode(stores, { uuid: await ownedUuid() }, { provisionState });
    }
    await createNode(
      stores,
      { uuid: await ownedUuid() },
      { provisionState: S.AVAILABLE, targetPowerState: 'power on' },
    );
    mine = [];
    theirs = [];
    for (const uuid of uuids) {
      const owner = await ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: '' });
      (owner === SELF ? mine : theirs).push(uuid);
    }
    expect(mine.length).toBeGreaterThan(WORKERS * 2);
    expect(theirs.length).toBeGreaterThan(0);
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** A ring over the conductors `hosts()` names at each read. */
  function ringOf(hosts: () => string[]): ConductorRing {
    const listAlive = async () =>
      hosts().map((hostname, i) => ({ id: i + 1, hostname, conductorGroup: '', drivers: ['fake-hardware'] }));
    return new ConductorRing({
      conductors: { listAlive },
      heartbeatTimeout: 60,
      resetInterval: 3600,
      logger: createSilentLogger(),
    });
  }

  let alive: string[];
  let ring: ConductorRing;
  let clock: number;
  let held: HeldReadings;
  let listings: number;
  let sync: PowerStateSync;

  beforeEach(() => {
    alive = [SELF, OTHER];
    ring = ringOf(() => alive);
    clock = Date.parse('2026-12-05T12:00:00Z');
    held = new HeldReadings();
    listings = 0;
    const counted = new Proxy(stores.periodicNodes, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'listForPeriodicTask' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          listings += 1;
          return value.apply(target, args);
        };
      },
    });
    sync = new PowerStateSync({
      stores: { ...stores, periodicNodes: counted },
      ring,
      tasks: held.tasks,
      runner: {} as ProvisioningRunner,
      self: { hostname: SELF, conductorGroup: '', hardwareTypes: ['fake-hardware'], id: () => 1 },
      config: {
        ...testConfig().conductor,
        sync_power_state_interval: INTERVAL_S,
        sync_power_state_workers: WORKERS,
      },
      logger: createSilentLogger(),
      now: () => new Date(clock),
      events: {} as NodeEventRecorder,
    });
  });

  const tick = async () => {
    await sync.syncPowerStates();
    await settle();
  };
  const advance = (seconds: number) => {
    clock += seconds * 1000;
  };

  it('reads every node it owns once an interval, at most [conductor]sync_power_state_workers at a time', async () => {
    await tick();
    expect(held.inFlight).toHaveLength(WORKERS);
    await held.endAll();
    expect(held.maxInFlight).toBe(WORKERS);
    expect([...held.started].sort()).toEqual([...mine].sort());
    for (const uuid of theirs) expect(held.started).not.toContain(uuid);

    // Nothing is due again until half an interval after its last reading (a lost request is
    // then tried again in time), and the nodes are listed once an interval.
    advance(INTERVAL_S / 2 - 1);
    await tick();
    expect(held.started).toHaveLength(mine.length);
    advance(1);
    await tick();
    await held.endAll();
    expect(held.started).toHaveLength(mine.length * 2);
    expect(listings).toBe(1);
    advance(INTERVAL_S / 2);
    await tick();
    await held.endAll();
    expect(held.started).toHaveLength(mine.length * 3);
    expect(listings).toBe(2);
  });

  it('starts no second reading of a node whose reading has not ended, and reads it again once it ends', async () => {
    await tick();
    const slow = held.inFlight[0] as string;
    // Every other reading ends; the slow one stays open over the next ticks.
    const others = held.inFlight.slice(1);
    for (;;) {
      await settle();
      const ending = held.inFlight.filter((uuid) => uuid !== slow);
      if (ending.length === 0) break;
      for (const uuid of ending) await held.endOne(uuid);
    }
    expect(others.length).toBe(WORKERS - 1);
    for (let i = 0; i < SYNC_TICKS_PER_INTERVAL; i++) {
      advance(INTERVAL_S / SYNC_TICKS_PER_INTERVAL);
      await tick();
      for (const uuid of held.inFlight) if (uuid !== slow) await held.endOne(uuid);
    }
    expect(held.started.filter((uuid) => uuid === slow)).toHaveLength(1);
    expect(held.started.filter((uuid) => uuid === others[0]).length).toBeGreaterThan(1);
    // Once it ends it is due again half an interval later, as any other.
    await held.endOne(slow);
    advance(INTERVAL_S / 2);
    await tick();
    await held.endAll();
    expect(held.started.filter((uuid) => uuid === slow)).toHaveLength(2);
  });

  it('reads the oldest reading first', async () => {
    await tick();
    // The readings end in another order than they started, a second apart each.
    const ended: string[] = [];
    while (held.inFlight.length > 0) {
      const last = held.inFlight.at(-1) as string;
      advance(1);
      ended.push(last);
      await held.endOne(last);
    }
    expect(ended).not.toEqual(held.started);
    const firstPass = held.started.length;
    advance(INTERVAL_S);
    await tick();
    await held.endAll();
    expect(held.started.slice(firstPass)).toEqual(ended);
  });

  it('leaves a node the ring has moved to another conductor since the listing', async () => {
    await tick();
    // The first readings had started; the ring now names the other conductor for every node.
    const first = [...held.inFlight];
    expect(first).toHaveLength(WORKERS);
    alive = [OTHER];
    ring.invalidate();
    await held.endAll();
    expect(held.started).toEqual(first);
  });
});
