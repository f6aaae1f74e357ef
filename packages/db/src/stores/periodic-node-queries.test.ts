import { createTestDatabase, newNode, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeChanges } from './node-rows.js';
import { NodeStore } from './node-store.js';
import { type PeriodicNodeFilter, PeriodicNodeQueries } from './periodic-node-queries.js';

describe('PeriodicNodeQueries', () => {
  let t: TestDatabase;
  let nodes: NodeStore;
  let periodic: PeriodicNodeQueries;
  beforeAll(async () => {
    t = await createTestDatabase();
    nodes = new NodeStore(t.db);
    periodic = new PeriodicNodeQueries(t.db);
  });
  afterAll(() => t.drop());

  it('finds nodes by state and by (group, drivers)', async () => {
    const node = await nodes.create(newNode({ conductorGroup: 'state-q' }));
    await nodes.update(node.id, { provisionState: 'wait call-back' });
    const waiting = await periodic.listForPeriodicTask('state-q', ['fake-hardware'], {
      provisionStateIn: ['wait call-back'],
    });
    expect(waiting.map((n) => n.uuid)).toEqual([node.uuid]);
    expect(
      await periodic.listForPeriodicTask('state-q', ['fake-hardware'], { provisionStateIn: ['deploying'] }),
    ).toEqual([]);
    expect(await periodic.listForPeriodicTask('state-q', ['fake-hardware'])).toEqual([
      { id: node.id, uuid: node.uuid, driver: 'fake-hardware', conductorGroup: 'state-q' },
    ]);
    expect(await periodic.listForPeriodicTask('state-q', ['ipmi'])).toEqual([]);
  });

  it('narrows what a periodic task lists in SQL', async () => {
    const inserted = await t
      .db('conductors')
      .insert([
        { hostname: 'c-periodic', drivers: '[]' },
        { hostname: 'c-periodic-other', drivers: '[]' },
      ])
      .returning('id');
    const [conductorId, otherConductorId] = inserted.map((row: { id: number }) => row.id) as [number, number];
    const group = 'periodic-q';
    const make = async (changes: NodeChanges) => {
      const node = await nodes.create(newNode({ conductorGroup: group }));
      await nodes.update(node.id, changes);
      return node.uuid;
    };
    const active = await make({ provisionState: 'active', powerState: 'power on' });
    const waiting = await make({ provisionState: 'wait call-back' });
    const locked = await make({ provisionState: 'active', reservation: 'c-periodic' });
    const changingPower = await make({ provisionState: 'active', targetPowerState: 'power off' });
    const failedPower = await make({ provisionState: 'active', maintenance: true, fault: 'power failure' });
    const otherMaintenance = await make({ provisionState: 'active', maintenance: true, fault: 'clean failure' });
    const preparedHere = await make({ provisionState: 'active', conductorAffinity: conductorId });
    const preparedElsewhere = await make({ provisionState: 'deploying', conductorAffinity: otherConductorId });
    const uuids = async (filter: PeriodicNodeFilter) =>
      (await periodic.listForPeriodicTask(group, ['fake-hardware'], filter)).map((n) => n.uuid).sort();

    expect(
      await uuids({
        maintenance: false,
        unreserved: true,
        noTargetPowerState: true,
        provisionStateNotIn: ['wait call-back', 'enroll'],
      }),
    ).toEqual([active, preparedElsewhere, preparedHere].sort());
    expect(await uuids({ maintenance: true, fault: 'power failure', unreserved: true })).toEqual([failedPower]);
    expect(await uuids({ maintenance: false, preparedByOtherThan: conductorId })).toEqual([preparedElsewhere]);
    expect(await uuids({})).toEqual(
      [active, waiting, locked, changingPower, failedPower, otherMaintenance, preparedHere, preparedElsewhere].sort(),
    );
  });

  it('lists the nodes that stayed in a state longer than its own limit, counted as the wait timeouts count', async () => {
    const group = 'overdue-q';
    const now = new Date();
    const minutesAgo = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
    const make = async (changes: NodeChanges) => {
      const node = await nodes.create(newNode({ conductorGroup: group }));
      await nodes.update(node.id, changes);
      return node.uuid;
    };
    const lateDeploy = await make({ provisionState: 'wait call-back', provisionUpdatedAt: minutesAgo(31) });
    const freshDeploy = await make({ provisionState: 'wait call-back', provisionUpdatedAt: minutesAgo(29) });
    const lateClean = await make({ provisionState: 'clean wait', provisionUpdatedAt: minutesAgo(11) });
    const freshClean = await make({ provisionState: 'clean wait', provisionUpdatedAt: minutesAgo(9) });
    const lateInMaintenance = await make({
      provisionState: 'wait call-back',
      provisionUpdatedAt: minutesAgo(60),
      maintenance: true,
    });
    const lateButUntimed = await make({ provisionState: 'inspect wait', provisionUpdatedAt: minutesAgo(600) });
    const lateElsewhere = await make({ provisionState: 'active', provisionUpdatedAt: minutesAgo(600) });
    // Never stamped: counted from updated_at.
    const unstampedLate = await make({ provisionState: 'wait call-back', provisionUpdatedAt: null });
    await t
      .db('nodes')
      .where({ uuid: unstampedLate })
      .update({ updated_at: minutesAgo(31) });
    await make({ provisionState: 'wait call-back', provisionUpdatedAt: null }); // updated just now: never listed
    const overdue = async (seconds: Record<string, number>, maintenance?: boolean) =>
      (
        await periodic.listForPeriodicTask(group, ['fake-hardware'], {
          ...(maintenance === undefined ? {} : { maintenance }),
          inStateLongerThan: { seconds, now },
        })
      )
        .map((n) => n.uuid)
        .sort();

    expect(await overdue({ 'wait call-back': 1800, 'clean wait': 600 }, false)).toEqual(
      [lateDeploy, lateClean, unstampedLate].sort(),
    );
    expect(await overdue({ 'wait call-back': 1800, 'clean wait': 600 })).toEqual(
      [lateDeploy, lateClean, lateInMaintenance, unstampedLate].sort(),
    );
    expect(await overdue({ 'wait call-back': 1739 }, false)).toEqual([lateDeploy, freshDeploy, unstampedLate].sort());
    expect(await overdue({ 'wait call-back': 3600 }, false)).toEqual([]);
    expect(await overdue({}, false)).toEqual([]);
    expect(await overdue({ 'clean wait': 539, 'inspect wait': 35_999, active: 36_001 }, false)).toEqual(
      [lateClean, freshClean, lateButUntimed].sort(),
    );
    expect(await overdue({ active: 35_999 })).toEqual([lateElsewhere]);
  });
});
