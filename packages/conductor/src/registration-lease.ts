import { ConductorFenced, type Logger } from '@bmaas/common';

export interface RegistrationLeaseOptions {
  /** Registered hostname, for the error and the logs. */
  hostname: string;
  /** [conductor]heartbeat_timeout in ms: past it, the others count this conductor dead. */
  timeoutMs: number;
  logger: Logger;
  /** Monotonic clock in ms (default performance.now). */
  clock?: () => number;
}

/**
 * The conductor's registration as a lease (fencing). The others call a conductor dead when
 * its heartbeat row is older than heartbeat_timeout by the database clock, and then take
 * its nodes. The row's time is set after the renewal was sent, so a lease counted from the
 * moment the renewal was *sent* always runs out here no later than the others' view of it:
 * once it has, this conductor acts on no node (guard), whatever it was doing.
 *
 * Each lapse starts a new epoch. Work begun in an earlier epoch (a deploy in the background,
 * a lock taken before the cut) stays void after the lease is renewed: another conductor may
 * have driven the node meanwhile, so only work started after the renewal may act.
 */
export class RegistrationLease {
  private renewedFrom: number | undefined;
  private lapsed = false;
  private currentEpoch = 0;
  /** Notices the lapse when it happens, even when nothing asks meanwhile (the log line). */
  private expiry: NodeJS.Timeout | undefined;
  private readonly clock: () => number;

  constructor(private readonly options: RegistrationLeaseOptions) {
    this.clock = options.clock ?? (() => performance.now());
  }

  /** The epoch work started now belongs to. */
  get epoch(): number {
    this.notice();
    return this.currentEpoch;
  }

  /** True while the lease has run out (or was never taken: before the first registration, nothing is fenced). */
  get fenced(): boolean {
    this.notice();
    return this.lapsed;
  }

  /** Seconds since the last renewal was sent (Infinity before the first). */
  get age(): number {
    return this.renewedFrom === undefined ? Number.POSITIVE_INFINITY : (this.clock() - this.renewedFrom) / 1000;
  }

  /**
   * Throws ConductorFenced when the lease has run out, or when `epoch` (that of the work
   * asking) is older than the current one.
   */
  guard(epoch: number): void {
    this.notice();
    if (this.lapsed || epoch !== this.currentEpoch) throw new ConductorFenced(this.options.hostname, this.age);
  }

  /**
   * Runs one renewal (register or heartbeat); the lease counts from the moment it was sent.
   * After a lapse, `rejoin` runs first (the void work's leftovers are cleaned up while still
   * fenced), then the lease is active again in a new epoch.
   */
  async renew(renewal: () => Promise<void>, rejoin?: () => Promise<void>): Promise<void> {
    const sentAt = this.clock();
    await renewal();
    this.notice();
    if (this.lapsed) {
      await rejoin?.();
      this.options.logger.warn('registration renewed after a lapse: acting on nodes again', {
        lapsedForSeconds: Number(this.age.toFixed(1)),
        epoch: this.currentEpoch,
      });
    }
    if (this.renewedFrom === undefined || sentAt > this.renewedFrom) this.renewedFrom = sentAt;
    this.lapsed = false;
    this.watchExpiry();
  }

  /**
   * Notices the lapse when the lease runs out. A timer may fire before the lease's clock
   * says so: Node counts timers from the loop's cached time, behind the clock by as long as
   * the loop's turn had run when the timer was set, which on a loaded machine is more than
   * any margin. One that fires early is set again for what is left.
   */
  private watchExpiry(): void {
    clearTimeout(this.expiry);
    if (this.renewedFrom === undefined) return;
    const left = this.renewedFrom + this.options.timeoutMs - this.clock();
    this.expiry = setTimeout(() => {
      this.notice();
      if (!this.lapsed) this.watchExpiry();
    }, Math.max(0, left) + 1);
    this.expiry.unref();
  }

  /** Stops the timer that notices a lapse (the conductor stopped). */
  close(): void {
    clearTimeout(this.expiry);
  }

  /** Notices a lapse once: a new epoch, and one line in the log. */
  private notice(): void {
    if (this.lapsed || this.renewedFrom === undefined) return;
    if (this.clock() - this.renewedFrom <= this.options.timeoutMs) return;
    this.lapsed = true;
    this.currentEpoch++;
    this.options.logger.error('registration not renewed within heartbeat_timeout: fenced, acting on no node', {
      sinceSeconds: Number(this.age.toFixed(1)),
      epoch: this.currentEpoch,
    });
  }
}
