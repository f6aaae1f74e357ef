import { randomUUID } from 'node:crypto';
import { createSilentLogger, NoValidHost, TemporaryFailure } from '@bmaas/common';
import { ConductorStore } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import HashRing from 'hashring';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConductorRing } from './ring.js';

let database: TestDatabase;
let conductors: ConductorStore;
let clock: number;

function ringOf(resetInterval = 15): ConductorRing {
  return new ConductorRing({
    conductors,
    heartbeatTimeout: 60,
    resetInterval,
    logger: createSilentLogger(),
    now: () => clock,
  });
}

async function register(hostname: string, drivers = ['fake-hardware'], conductorGroup = ''): Promise<void> {
  await conductors.register({ hostname, conductorGroup, drivers, interfaces: [] });
}

beforeAll(async () => {
  database = await createTestDatabase();
  conductors = new ConductorStore(database.db);
});
afterAll(async () => {
  await database?.drop();
});
beforeEach(async () => {
  clock = 1_000_000;
  await database.db('conductors').delete();
});

describe('ConductorRing', () => {
  it('spreads nodes evenly over three conductors', async () => {
    const hosts = ['127.0.0.1:41873', '127.0.0.1:52904', '127.0.0.1:38117'];
    for (const host of hosts) await register(host);
    const ring = ringOf();
    const counts = new Map(hosts.map((h) => [h, 0]));
    const total = 3000;
    for (let i = 0; i < total; i++) {
      const host = await ring.hostFor({ uuid: randomUUID(), driver: 'fake-hardware', conductorGroup: '' });
      counts.set(host, (counts.get(host) ?? 0) + 1);
    }
    for (const count of counts.values()) {
      expect(Math.abs(count - total / 3) / (total / 3)).toBeLessThan(0.2);
    }
  });

  it('maps a node to the same conductor every time and moves few nodes when one joins', async () => {
    await register('a');
    await register('b');
    const ring = ringOf();
    const nodes = Array.from({ length: 600 }, () => ({
      uuid: randomUUID(),
      driver: 'fake-hardware',
      conductorGroup: '',
    }));
    const before = await Promise.all(nodes.map((n) => ring.hostFor(n)));
    expect(await Promise.all(nodes.map((n) => ring.hostFor(n)))).toEqual(before);

    await register('c');
    ring.invalidate();
    const after = await Promise.all(nodes.map((n) => ring.hostFor(n)));
    const moved = after.filter((host, i) => host !== before[i]);
    // Consistent hashing: only nodes now owned by the newcomer move (about a third).
    expect(moved.every((host) => host === 'c')).toBe(true);
    expect(moved.length).toBeGreaterThan(100);
    expect(moved.length).toBeLessThan(300);
  });

  it('rebuilds once on a miss, so a conductor that just joined is found before the reset interval', async () => {
    await register('a', ['fake-hardware']);
    const ring = ringOf(3600);
    const other = { uuid: randomUUID(), driver: 'other-hardware', conductorGroup: '' };
    await expect(ring.hostFor(other)).rejects.toBeInstanceOf(NoValidHost);
    await register('b', ['other-hardware']);
    clock += 1;
    expect(await ring.hostFor(other)).toBe('b');
  });

  it('names the owner at once only while fresh rings hold the key, as hostFor would', async () => {
    await register('a');
    await register('b');
    const ring = ringOf(15);
    const node = { uuid: randomUUID(), driver: 'fake-hardware', conductorGroup: '' };
    // Nothing read yet.
    expect(ring.hostNow(node)).toBeUndefined();
    const owner = await ring.hostFor(node);
    expect(ring.hostNow(node)).toBe(owner);
    expect(ring.hostNow({ ...node, driver: 'other-hardware' })).toBeUndefined();
    // Past the reset interval, or invalidated: only hostFor reads the members again.
    clock += 15_000;
    expect(ring.hostNow(node)).toBeUndefined();
    expect(await ring.hostFor(node)).toBe(owner);
    ring.invalidate();
    expect(ring.hostNow(node)).toBeUndefined();
  });

  it('keys rings by conductor group (case-insensitive) and hardware type', async () => {
    await register('rack1-conductor', ['fake-hardware'], 'rack1');
    await register('default-conductor', ['fake-hardware'], '');
    const ring = ringOf();
    const uuid = randomUUID();
    expect(await ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: 'RACK1' })).toBe('rack1-conductor');
    expect(await ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: '' })).toBe('default-conductor');
    await expect(ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: 'rack2' })).rejects.toBeInstanceOf(
      NoValidHost,
    );
  });

  it('names in hostNow the owner hostFor names, for every node, whatever the case of groups', async () => {
    await register('rack1-a', ['fake-hardware', 'ipmi'], 'Rack1');
    await register('rack1-b', ['fake-hardware'], 'rack1');
    await register('default-a', ['fake-hardware'], '');
    await register('default-b', ['fake-hardware', 'ipmi'], '');
    const ring = ringOf();
    await ring.members();
    const owners = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const node = {
        uuid: randomUUID(),
        driver: i % 2 ? 'ipmi' : 'fake-hardware',
        conductorGroup: ['', 'rack1', 'RACK1'][i % 3] as string,
      };
      const owner = await ring.hostFor(node);
      owners.set(owner, (owners.get(owner) ?? 0) + 1);
      // A group in another case than the conductors' is left to hostFor, which folds it.
      expect(ring.hostNow(node)).toBe(node.conductorGroup === 'RACK1' ? undefined : owner);
      expect(await ring.hostFor(node)).toBe(owner);
    }
    expect([...owners.keys()].sort()).toEqual(['default-a', 'default-b', 'rack1-a', 'rack1-b']);
    // The ipmi rings have one member each.
    const ipmi = { uuid: randomUUID(), driver: 'ipmi' };
    expect(ring.hostNow({ ...ipmi, conductorGroup: 'rack1' })).toBe('rack1-a');
    expect(ring.hostNow({ ...ipmi, conductorGroup: '' })).toBe('default-b');
  });

  it('drops a conductor whose heartbeat is older than the timeout, or that went offline', async () => {
    await register('a');
    await register('b');
    await register('c');
    const ring = ringOf(10);
    expect([...(await ring.members()).values()]).toEqual([['a', 'b', 'c']]);

    await database
      .db('conductors')
      .where({ hostname: 'b' })
      .update({ updated_at: database.db.raw("now() - interval '2 minutes'") });
    await conductors.markOffline('c');
    // Still cached until the reset interval passes.
    expect([...(await ring.members()).values()]).toEqual([['a', 'b', 'c']]);
    clock += 10_000;
    expect([...(await ring.members()).values()]).toEqual([['a']]);
    const nodes = Array.from({ length: 50 }, () => ({
      uuid: randomUUID(),
      driver: 'fake-hardware',
      conductorGroup: '',
    }));
    expect(new Set(await Promise.all(nodes.map((n) => ring.hostFor(n))))).toEqual(new Set(['a']));
  });

  it('keeps its rings while the members stay the same, and remembers more owners than hashring does by default', async () => {
    await register('a');
    await register('b');
    const ring = ringOf(10);
    const built = vi.spyOn(HashRing.prototype, 'continuum');
    try {
      const nodes = Array.from({ length: 6000 }, () => ({
        uuid: randomUUID(),
        driver: 'fake-hardware',
        conductorGroup: '',
      }));
      for (const node of nodes) await ring.hostFor(node);
      expect(built).toHaveBeenCalledTimes(1);
      // hashring's key hashing, which a remembered owner skips (not in its type declarations).
      const hash = vi.spyOn(HashRing.prototype as unknown as { hash(key: string): unknown }, 'hash');
      clock += 10_000;
      ring.invalidate();
      // Read again, same members: no new ring, and each of the 6,000 owners is still remembered.
      for (const node of nodes) await ring.hostFor(node);
      expect(built).toHaveBeenCalledTimes(1);
      expect(hash).not.toHaveBeenCalled();
      await register('c');
      ring.invalidate();
      await ring.hostFor(nodes[0] as (typeof nodes)[number]);
      expect(built).toHaveBeenCalledTimes(2);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('names any alive conductor, of any group and hardware type, for work of no node; none alive: TemporaryFailure', async () => {
    const ring = ringOf();
    await expect(ring.anyHost()).rejects.toBeInstanceOf(TemporaryFailure);
    await register('c1');
    await register('c2', ['ipmi'], 'rack-b');
    // A conductor that joined is found at once, as by hostFor.
    clock += 1;
    const named = new Set<string>();
    for (let i = 0; i < 64; i++) named.add(await ring.anyHost());
    expect([...named].sort()).toEqual(['c1', 'c2']);
  });

  it('answers TemporaryFailure when no conductor is alive at all', async () => {
    const ring = ringOf();
    await expect(
      ring.hostFor({ uuid: randomUUID(), driver: 'fake-hardware', conductorGroup: '' }),
    ).rejects.toBeInstanceOf(TemporaryFailure);
  });
});
