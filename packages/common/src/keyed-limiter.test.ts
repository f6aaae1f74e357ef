import { describe, expect, it } from 'vitest';
import { KeyedLimiter } from './keyed-limiter.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('KeyedLimiter', () => {
  it('runs at most `limit` calls per key, in order, and other keys freely', async () => {
    const limiter = new KeyedLimiter(2);
    const gates = [deferred(), deferred(), deferred()];
    const started: string[] = [];
    const calls = gates.map((gate, i) =>
      limiter.run('bmc-a', async () => {
        started.push(`a${i}`);
        await gate.promise;
        return i;
      }),
    );
    const other = limiter.run('bmc-b', async () => 'b');
    await expect(other).resolves.toBe('b');
    expect(started).toEqual(['a0', 'a1']);
    expect(limiter.inFlight('bmc-a')).toBe(2);
    gates[1]?.resolve();
    await calls[1];
    await Promise.resolve();
    expect(started).toEqual(['a0', 'a1', 'a2']);
    gates[0]?.resolve();
    gates[2]?.resolve();
    await expect(Promise.all(calls)).resolves.toEqual([0, 1, 2]);
    expect(limiter.inFlight('bmc-a')).toBe(0);
  });

  it('frees the place of a call that failed', async () => {
    const limiter = new KeyedLimiter(1);
    await expect(limiter.run('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run('k', async () => 'next')).resolves.toBe('next');
    expect(limiter.inFlight('k')).toBe(0);
  });

  it('refuses a limit below one', () => {
    expect(() => new KeyedLimiter(0)).toThrow(RangeError);
  });
});
