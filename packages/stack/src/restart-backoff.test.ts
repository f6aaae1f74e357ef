import { describe, expect, it } from 'vitest';
import { MAX_RESTART_DELAY_MS, RestartBackoff, STABLE_RUN_MS } from './restart-backoff.js';

describe('RestartBackoff', () => {
  it('doubles the wait while a process keeps crashing, up to the maximum, per process', () => {
    const backoff = new RestartBackoff();
    const delays = Array.from({ length: 8 }, () => backoff.delayAfterExit('api', 500));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    expect(Math.max(...delays)).toBe(MAX_RESTART_DELAY_MS);
    expect(backoff.delayAfterExit('conductor-1', 500)).toBe(1000);
  });

  it('starts again from the first wait after a process ran long enough', () => {
    const backoff = new RestartBackoff();
    backoff.delayAfterExit('api', 100);
    backoff.delayAfterExit('api', 100);
    expect(backoff.delayAfterExit('api', STABLE_RUN_MS)).toBe(1000);
    expect(backoff.delayAfterExit('api', 100)).toBe(2000);
  });
});
