import { createSilentLogger } from '@bmaas/common';
import { BootPathChangeFeed, type Stores } from '@bmaas/db';
import { FakeConductorClient } from '@bmaas/rpc-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';
import { BootConfigController } from './boot-config-controller.js';
import { BootLookupIndex } from './boot-lookup-index.js';

describe('BootLookupIndex, following the change log', () => {
  // The harness's database and stores; its REST server is not used here.
  let api: ApiHarness;
  let stores: Stores;
  beforeAll(async () => {
    api = await ApiHarness.start();
    stores = api.stores;
    await api.registerConductor('conductor-a');
  });
  afterAll(() => api.close());

  function followed(): { index: BootLookupIndex; feed: BootPathChangeFeed } {
    let feed: BootPathChangeFeed | undefined;
    const index = new BootLookupIndex(stores.ports, () => feed?.following ?? false);
    feed = new BootPathChangeFeed({
      store: stores.bootPathChanges,
      listener: index,
      intervalMs: 1000,
      logger: createSilentLogger(),
    });
    return { index, feed };
  }

  async function storeNode(provisionState: string, macs: string[]) {
    const node = await api.storeNode(provisionState, macs);
    return { node, ports: await stores.ports.listByNode(node.id) };
  }

  it('holds every MAC once the feed has read, and follows state, MAC, port and node changes', async () => {
    const { node, ports } = await storeNode('wait call-back', ['52:54:00:bb:00:01', '52:54:00:bb:00:02']);
    const { index, feed } = followed();
    expect(index.get('52:54:00:bb:00:01')).toBeUndefined();
    await feed.poll();
    expect(index.get('52:54:00:bb:00:01')).toEqual({
      nodeId: node.id,
      nodeUuid: node.uuid,
      provisionState: 'wait call-back',
      driver: 'fake-hardware',
      conductorGroup: '',
    });

    await stores.nodes.update(node.id, { provisionState: 'active' });
    // One poll behind at most: the old state until the feed reads the change.
    expect(index.get('52:54:00:bb:00:02')?.provisionState).toBe('wait call-back');
    await feed.poll();
    expect(index.get('52:54:00:bb:00:02')?.provisionState).toBe('active');

    await stores.ports.update((ports[0] as { id: number }).id, { address: '52:54:00:bb:00:03' });
    await stores.ports.destroy((ports[1] as { id: number }).id);
    await feed.poll();
    expect(index.get('52:54:00:bb:00:01')).toBeUndefined();
    expect(index.get('52:54:00:bb:00:02')).toBeUndefined();
    expect(index.get('52:54:00:bb:00:03')?.nodeUuid).toBe(node.uuid);

    // A MAC moved from one node to another in one transaction.
    const other = await storeNode('clean wait', []);
    await api.database.db.transaction(async (trx) => {
      await trx('ports').where({ address: '52:54:00:bb:00:03' }).update({ node_id: other.node.id });
    });
    await feed.poll();
    expect(index.get('52:54:00:bb:00:03')?.nodeUuid).toBe(other.node.uuid);

    await stores.nodes.destroy(other.node.id);
    await feed.poll();
    expect(index.get('52:54:00:bb:00:03')).toBeUndefined();
  });

  it('answers nothing while its feed does not follow the log', async () => {
    await storeNode('wait call-back', ['52:54:00:bb:01:01']);
    let following = true;
    // Filled two ports per query: every MAC there is, whatever the page size.
    const index = new BootLookupIndex(stores.ports, () => following, 2);
    await index.reset();
    expect(index.size).toBe(Number((await api.database.db('ports').count({ n: '*' }))[0]?.n));
    expect(index.get('52:54:00:bb:01:01')).toBeDefined();
    following = false;
    expect(index.get('52:54:00:bb:01:01')).toBeUndefined();
  });

  it('lets the controller serve a waiting node without a query, and leaves every other answer to PostgreSQL', async () => {
    const waiting = await storeNode('wait call-back', ['52:54:00:bb:02:01']);
    const active = await storeNode('active', ['52:54:00:bb:02:02']);
    const { index, feed } = followed();
    await feed.poll();
    let queries = 0;
    const conductors = new FakeConductorClient({ conductors: stores.conductors, heartbeatTimeout: 60 });
    conductors.respondWith('get_boot_config', ({ node_id }) => ({ content: `#!ipxe\necho ${node_id}\n` }));
    const controller = new BootConfigController({
      ports: {
        bootLookup: (mac) => {
          queries++;
          return stores.ports.bootLookup(mac);
        },
      },
      index,
      conductors,
      restrictToWaitStates: true,
      rpcTimeoutMs: 5000,
    });

    expect(await controller.answer('52:54:00:bb:02:01', 'boot.ipxe', 'req-1')).toMatchObject({
      ok: true,
      nodeUuid: waiting.node.uuid,
    });
    expect(queries).toBe(0);

    // Refused by the index's state: PostgreSQL is asked, and still refuses.
    expect(await controller.answer('52:54:00:bb:02:02', 'boot.ipxe', 'req-2')).toMatchObject({
      ok: false,
      reason: 'state-not-allowed',
    });
    expect(queries).toBe(1);

    // The node entered a wait state after the last poll: served at once, from PostgreSQL's answer.
    await stores.nodes.update(active.node.id, { provisionState: 'clean wait' });
    expect(await controller.answer('52:54:00:bb:02:02', 'boot.ipxe', 'req-3')).toMatchObject({
      ok: true,
      nodeUuid: active.node.uuid,
    });
    expect(queries).toBe(2);

    // A MAC enrolled after the last poll: found in PostgreSQL.
    const late = await storeNode('wait call-back', ['52:54:00:bb:02:03']);
    expect(await controller.answer('52:54:00:bb:02:03', 'boot.ipxe', 'req-4')).toMatchObject({
      ok: true,
      nodeUuid: late.node.uuid,
    });
    expect(queries).toBe(3);

    // A node that left its wait state is refused once the feed has read the change.
    await stores.nodes.update(waiting.node.id, { provisionState: 'active' });
    await feed.poll();
    expect(await controller.answer('52:54:00:bb:02:01', 'boot.ipxe', 'req-5')).toMatchObject({
      ok: false,
      reason: 'state-not-allowed',
    });
  });

  it('answers by its deadline when the lookup or the conductor never answers, and serves on time otherwise', async () => {
    const waiting = await storeNode('wait call-back', ['52:54:00:bb:03:01']);
    const conductors = new FakeConductorClient({ conductors: stores.conductors, heartbeatTimeout: 60 });
    const never = new Promise<never>(() => {});
    const { index, feed } = followed();
    await feed.poll();
    const controller = (lookup: 'hangs' | 'answers' | 'indexed') =>
      new BootConfigController({
        ports: { bootLookup: (mac) => (lookup === 'answers' ? stores.ports.bootLookup(mac) : never) },
        index: lookup === 'indexed' ? index : undefined,
        conductors,
        restrictToWaitStates: true,
        rpcTimeoutMs: 300,
      });
    const timed = async (answer: Promise<unknown>) => {
      const started = Date.now();
      const value = await answer;
      return { value, ms: Date.now() - started };
    };

    const lookupHangs = await timed(controller('hangs').answer('52:54:00:bb:03:01', 'boot.ipxe', 'req-1'));
    expect(lookupHangs.value).toMatchObject({ ok: false, reason: 'deadline' });
    expect(lookupHangs.ms).toBeGreaterThanOrEqual(250);
    expect(lookupHangs.ms).toBeLessThan(3000);

    conductors.respondWith('get_boot_config', () => never);
    const callHangs = await timed(controller('answers').answer('52:54:00:bb:03:01', 'boot.ipxe', 'req-2'));
    expect(callHangs.value).toMatchObject({ ok: false, reason: 'rpc-timeout', nodeUuid: waiting.node.uuid });
    expect(callHangs.ms).toBeGreaterThanOrEqual(250);
    expect(callHangs.ms).toBeLessThan(3000);

    // From the index, no lookup at all: the call alone, bounded by its own timeout.
    const indexedCallHangs = await timed(controller('indexed').answer('52:54:00:bb:03:01', 'boot.ipxe', 'req-4'));
    expect(indexedCallHangs.value).toMatchObject({ ok: false, reason: 'rpc-timeout', nodeUuid: waiting.node.uuid });
    expect(indexedCallHangs.ms).toBeGreaterThanOrEqual(250);
    expect(indexedCallHangs.ms).toBeLessThan(3000);

    // Answers that come in time win, and the deadline's timer leaves nothing behind for the next request.
    conductors.respondWith('get_boot_config', async () => ({ content: '#!ipxe\n' }));
    expect(await controller('answers').answer('52:54:00:bb:03:01', 'boot.ipxe', 'req-3')).toMatchObject({ ok: true });
  });
});
