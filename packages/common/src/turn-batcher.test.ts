import { describe, expect, it } from 'vitest';
import { TurnBatcher } from './turn-batcher.js';

describe('TurnBatcher', () => {
  it('answers the requests of one turn with one load, each with its own value', async () => {
    const loads: number[][] = [];
    const batcher = new TurnBatcher(async (keys: number[]) => {
      loads.push(keys);
      return keys.map((k) => k * 10);
    });
    expect(await Promise.all([batcher.get(1), batcher.get(2), batcher.get(3)])).toEqual([10, 20, 30]);
    expect(await batcher.get(4)).toBe(40);
    expect(loads).toEqual([[1, 2, 3], [4]]);
  });

  it('sends a full batch at once and the rest at the end of the turn', async () => {
    const loads: number[][] = [];
    const batcher = new TurnBatcher(
      async (keys: number[]) => {
        loads.push(keys);
        return keys;
      },
      { maxBatch: 2 },
    );
    await Promise.all([1, 2, 3, 4, 5].map((k) => batcher.get(k)));
    expect(loads).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('holds requests while maxInFlight batches are out, then sends them together', async () => {
    const loads: number[][] = [];
    let release: () => void = () => {};
    const batcher = new TurnBatcher(
      async (keys: number[]) => {
        loads.push(keys);
        if (keys[0] === 1) await new Promise<void>((resolve) => (release = resolve));
        return keys;
      },
      { maxInFlight: 1 },
    );
    const first = batcher.get(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [2, 3, 4].map((k) => batcher.get(k));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(loads).toEqual([[1]]);
    release();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4]);
    expect(loads).toEqual([[1], [2, 3, 4]]);
  });

  it('fails every request of a batch whose load failed, and only those', async () => {
    let fail = true;
    const batcher = new TurnBatcher(async (keys: string[]) => {
      if (fail) throw new Error('database down');
      return keys;
    });
    const results = await Promise.allSettled([batcher.get('a'), batcher.get('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await batcher.get('c')).toBe('c');
  });

  it('refuses a load that answers the wrong number of values', async () => {
    const batcher = new TurnBatcher(async (keys: string[]) => keys.slice(1));
    await expect(Promise.all([batcher.get('a'), batcher.get('b')])).rejects.toThrow(/1 values for 2 keys/);
  });
});
