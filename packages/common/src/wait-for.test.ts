import { describe, expect, it } from 'vitest';
import { mapLimit, until, WaitTimeoutError, waitFor, withTimeout } from './wait-for.js';

describe('waitFor', () => {
  it('returns the first value the probe gives', async () => {
    let calls = 0;
    expect(
      await waitFor('the third call', async () => (++calls === 3 ? 'yes' : undefined), {
        timeoutMs: 2000,
        intervalMs: 1,
      }),
    ).toBe('yes');
    expect(calls).toBe(3);
  });

  it('times out naming what it waited for and what the last probe saw', async () => {
    await expect(
      waitFor('nothing', async () => undefined, { timeoutMs: 50, intervalMs: 10, describe: () => 'still nothing' }),
    ).rejects.toThrow('timed out after 50 ms waiting for nothing: still nothing');
  });

  it('takes a synchronous probe, and a condition through until()', async () => {
    let calls = 0;
    expect(
      await waitFor('the second call', () => (++calls === 2 ? calls : undefined), { timeoutMs: 2000, intervalMs: 1 }),
    ).toBe(2);
    let flag = false;
    setTimeout(() => {
      flag = true;
    }, 20);
    expect(
      await waitFor(
        'the flag',
        until(() => flag),
        { timeoutMs: 2000, intervalMs: 5 },
      ),
    ).toBe(true);
  });

  it('throws a WaitTimeoutError that names what it waited for, probing once more at the deadline', async () => {
    let calls = 0;
    const started = Date.now();
    const error = await waitFor('nothing', () => void calls++, { timeoutMs: 100, intervalMs: 40 }).catch((e) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ name: 'WaitTimeoutError', what: 'nothing', timeoutMs: 100, aborted: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(calls).toBeGreaterThanOrEqual(3);
  });

  it('gives up early, after one last probe, once abortReason gives a reason', async () => {
    const started = Date.now();
    await expect(
      waitFor('a line', async () => undefined, { timeoutMs: 10_000, abortReason: () => 'qemu exited' }),
    ).rejects.toThrow(new WaitTimeoutError('a line', 10_000, 'qemu exited', ''));
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('withTimeout and mapLimit', () => {
  it('bounds a promise, and runs at most `limit` items at once, results in order', async () => {
    await expect(withTimeout(new Promise(() => {}), 20, 'forever')).rejects.toThrow('forever: timed out after 20 ms');
    let inFlight = 0;
    let most = 0;
    const results = await mapLimit([5, 1, 3, 2], 2, async (item) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, item));
      inFlight--;
      return item * 10;
    });
    expect(results).toEqual([50, 10, 30, 20]);
    expect(most).toBe(2);
  });
});
