import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConductorStore } from './conductor-store.js';

describe('ConductorStore', () => {
  let t: TestDatabase;
  let conductors: ConductorStore;
  beforeAll(async () => {
    t = await createTestDatabase();
    conductors = new ConductorStore(t.db);
  });
  afterAll(() => t.drop());

  const register = (hostname: string, group = '') =>
    conductors.register({
      hostname,
      conductorGroup: group,
      drivers: ['fake-hardware'],
      interfaces: [
        { hardwareType: 'fake-hardware', interfaceType: 'boot', interfaceName: 'fake', isDefault: true },
        { hardwareType: 'fake-hardware', interfaceType: 'boot', interfaceName: 'ipxe', isDefault: false },
      ],
    });

  it('registers (upsert), heartbeats and goes offline', async () => {
    const first = await register('c1');
    const again = await register('c1', 'rack-b');
    expect(again.id).toBe(first.id);
    expect(again.conductorGroup).toBe('rack-b');
    expect(await conductors.touch('c1')).toBe(true);
    expect(await conductors.touch('nobody')).toBe(false);
    expect((await conductors.listAlive(60)).map((c) => c.hostname)).toEqual(['c1']);
    await conductors.markOffline('c1');
    expect(await conductors.listAlive(60)).toEqual([]);
    expect((await conductors.get('c1', 60))?.alive).toBe(false);
  });

  it('computes alive from the heartbeat age and exposes registered interfaces of alive conductors', async () => {
    await register('c2');
    await register('c3');
    await t
      .db('conductors')
      .where({ hostname: 'c3' })
      .update({ updated_at: t.db.raw("now() - interval '2 minutes'") });
    const listed = await conductors.list(60);
    expect(listed.find((c) => c.hostname === 'c2')?.alive).toBe(true);
    expect(listed.find((c) => c.hostname === 'c3')?.alive).toBe(false);
    expect((await conductors.listAlive(60)).map((c) => c.hostname)).toEqual(['c2']);
    expect((await conductors.listAlive(600)).map((c) => c.hostname)).toEqual(['c2', 'c3']);
    const interfaces = await conductors.aliveInterfaces(60);
    expect(interfaces).toHaveLength(2);
    expect(interfaces.find((i) => i.isDefault)?.interfaceName).toBe('fake');
  });
});
