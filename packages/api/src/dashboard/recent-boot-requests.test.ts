import { describe, expect, it } from 'vitest';
import type { BootRequestEvent } from '../boot/boot-request-observer.js';
import { RecentBootRequests } from './recent-boot-requests.js';

function event(index: number, outcome: BootRequestEvent['outcome'] = 'served'): BootRequestEvent {
  return { outcome, name: `n${index}`, mac: '52:54:00:00:00:01', nodeUuid: undefined, durationSeconds: 0.001 };
}

describe('RecentBootRequests', () => {
  it('keeps nothing before the first request', () => {
    const recent = new RecentBootRequests(3);
    expect(recent.recent()).toEqual([]);
    expect([recent.total, recent.served]).toEqual([0, 0]);
  });

  it('answers newest first with the time each was observed', () => {
    let clock = 1000;
    const recent = new RecentBootRequests(3, () => clock++);
    recent.observe(event(1));
    recent.observe(event(2, 'unknown-mac'));
    expect(recent.recent()).toEqual([
      { at: 1001, event: event(2, 'unknown-mac') },
      { at: 1000, event: event(1) },
    ]);
  });

  it('keeps only the last `capacity` requests, but counts all of them', () => {
    const recent = new RecentBootRequests(3);
    for (let i = 1; i <= 7; i++) recent.observe(event(i, i % 2 === 0 ? 'state-not-allowed' : 'served'));
    expect(recent.recent().map((r) => r.event.name)).toEqual(['n7', 'n6', 'n5']);
    expect([recent.total, recent.served]).toEqual([7, 4]);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new RecentBootRequests(0)).toThrow(RangeError);
    expect(() => new RecentBootRequests(1.5)).toThrow(RangeError);
  });
});
