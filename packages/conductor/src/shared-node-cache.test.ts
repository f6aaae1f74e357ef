import type { NodeRecord, PortRecord } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { type NodeRead, SharedNodeCache } from './shared-node-cache.js';

function readOf(id: number, state = 'wait call-back'): NodeRead {
  const node = { id, uuid: `00000000-0000-4000-8000-${String(id).padStart(12, '0')}`, provisionState: state };
  const ports = [{ id: id * 10, address: `52:54:00:00:00:${String(id).padStart(2, '0')}`, extra: { a: [1] } }];
  return { node: node as unknown as NodeRecord, ports: ports as unknown as PortRecord[] };
}

/** A loader of the "database": counts its reads; `during` runs while a read is in flight. */
function loader(db: Map<string, NodeRead>) {
  const counter = { reads: 0, during: undefined as (() => void) | undefined };
  const load = (uuid: string) => async () => {
    counter.reads++;
    const read = db.get(uuid);
    await Promise.resolve();
    counter.during?.();
    return read;
  };
  return { counter, load };
}

describe('SharedNodeCache', () => {
  it('reads a node once, then answers from memory with a frozen copy until the change log names it', async () => {
    const first = readOf(1);
    const db = new Map([[first.node.uuid, first]]);
    const { counter, load } = loader(db);
    const cache = new SharedNodeCache(100, () => true);

    const a = await cache.read(first.node.uuid, load(first.node.uuid));
    const b = await cache.read(first.node.uuid, load(first.node.uuid));
    expect(counter.reads).toBe(1);
    expect(b).toBe(a);
    expect(Object.isFrozen(b?.node)).toBe(true);
    const extra = (b as NodeRead).ports[0]?.extra as { a: number[] };
    expect(extra.a).toEqual([1]);
    expect(() => extra.a.push(2)).toThrow(TypeError);

    db.set(first.node.uuid, readOf(1, 'active'));
    cache.changed({ everything: false, nodeIds: [2, 3] });
    expect((await cache.read(first.node.uuid, load(first.node.uuid)))?.node.provisionState).toBe('wait call-back');
    cache.changed({ everything: false, nodeIds: [1] });
    expect((await cache.read(first.node.uuid, load(first.node.uuid)))?.node.provisionState).toBe('active');
    expect(counter.reads).toBe(2);

    cache.reset();
    expect(cache.size).toBe(0);
  });

  it('hands over a held node without waiting, only while the feed follows the log', async () => {
    const node = readOf(1);
    const { load } = loader(new Map([[node.node.uuid, node]]));
    let following = true;
    const cache = new SharedNodeCache(100, () => following);
    expect(cache.held(node.node.uuid)).toBeUndefined();
    const read = await cache.read(node.node.uuid, load(node.node.uuid));
    expect(cache.held(node.node.uuid)).toBe(read);
    following = false;
    expect(cache.held(node.node.uuid)).toBeUndefined();
    following = true;
    cache.changed({ everything: false, nodeIds: [1] });
    expect(cache.held(node.node.uuid)).toBeUndefined();
  });

  it('does not keep a read that a change handed over meanwhile may have made stale', async () => {
    const node = readOf(1);
    const db = new Map([[node.node.uuid, node]]);
    const { counter, load } = loader(db);
    const cache = new SharedNodeCache(100, () => true);
    counter.during = () => cache.changed({ everything: false, nodeIds: [7] });
    await cache.read(node.node.uuid, load(node.node.uuid));
    expect(cache.size).toBe(0);
    counter.during = undefined;
    await cache.read(node.node.uuid, load(node.node.uuid));
    expect(cache.size).toBe(1);
  });

  it('reads the database every time while the feed does not follow the log', async () => {
    const node = readOf(1);
    const { counter, load } = loader(new Map([[node.node.uuid, node]]));
    let following = false;
    const cache = new SharedNodeCache(100, () => following);
    await cache.read(node.node.uuid, load(node.node.uuid));
    await cache.read(node.node.uuid, load(node.node.uuid));
    expect(counter.reads).toBe(2);
    expect(cache.size).toBe(0);
    following = true;
    await cache.read(node.node.uuid, load(node.node.uuid));
    following = false;
    await cache.read(node.node.uuid, load(node.node.uuid));
    expect(counter.reads).toBe(4);
  });

  it('reads the nodes the log names that it may soon serve, so a first boot request finds them held', async () => {
    const waiting = readOf(4);
    const { counter, load } = loader(new Map([[waiting.node.uuid, waiting]]));
    const asked: number[][] = [];
    const cache = new SharedNodeCache(
      100,
      () => true,
      async (nodeIds) => {
        asked.push([...nodeIds]);
        return nodeIds.includes(4) ? [waiting] : [];
      },
    );
    await cache.changed({ everything: false, nodeIds: [4, 5] });
    expect(asked).toEqual([[4, 5]]);
    expect(await cache.read(waiting.node.uuid, load(waiting.node.uuid))).toEqual(waiting);
    expect(counter.reads).toBe(0);
  });

  it('keeps at most maxEntries nodes, dropping the oldest, and keeps nothing for an unknown node', async () => {
    const reads = [1, 2, 3].map((id) => readOf(id));
    const db = new Map(reads.map((r) => [r.node.uuid, r]));
    const { counter, load } = loader(db);
    const cache = new SharedNodeCache(2, () => true);
    for (const r of reads) await cache.read(r.node.uuid, load(r.node.uuid));
    expect(cache.size).toBe(2);
    await cache.read((reads[0] as NodeRead).node.uuid, load((reads[0] as NodeRead).node.uuid));
    expect(counter.reads).toBe(4);
    expect(await cache.read('unknown', load('unknown'))).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});
