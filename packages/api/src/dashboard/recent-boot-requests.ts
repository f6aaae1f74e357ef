import type { BootRequestEvent, BootRequestObserver } from '../boot/boot-request-observer.js';

/** How many answered boot requests an API process keeps by default. */
export const RECENT_BOOT_REQUESTS_CAPACITY = 200;

/** One kept boot request: the observed event and when it was answered (epoch ms). */
export interface RecentBootRequest {
  at: number;
  event: BootRequestEvent;
}

/**
 * The last answered boot configuration requests of this API process, in a
 * fixed ring (not shared between API processes, lost on restart). Observing
 * is two slot writes and a counter: no await, no allocation beyond the
 * event the boot handler already made.
 */
export class RecentBootRequests implements BootRequestObserver {
  private readonly events: Array<BootRequestEvent | undefined>;
  private readonly times: Float64Array;
  private next = 0;
  private count = 0;
  private servedCount = 0;

  constructor(
    readonly capacity = RECENT_BOOT_REQUESTS_CAPACITY,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer`);
    this.events = new Array(capacity).fill(undefined);
    this.times = new Float64Array(capacity);
  }

  observe(event: BootRequestEvent): void {
    this.events[this.next] = event;
    this.times[this.next] = this.now();
    this.next = this.next + 1 === this.capacity ? 0 : this.next + 1;
    this.count++;
    if (event.outcome === 'served') this.servedCount++;
  }

  /** Requests answered since the process started, kept or not. */
  get total(): number {
    return this.count;
  }

  /** Of total, how many were served. */
  get served(): number {
    return this.servedCount;
  }

  /** The kept requests, newest first. */
  recent(): RecentBootRequest[] {
    const kept = Math.min(this.count, this.capacity);
    const out: RecentBootRequest[] = [];
    for (let i = 1; i <= kept; i++) {
      const slot = (this.next - i + this.capacity) % this.capacity;
      out.push({ at: this.times[slot] as number, event: this.events[slot] as BootRequestEvent });
    }
    return out;
  }
}
