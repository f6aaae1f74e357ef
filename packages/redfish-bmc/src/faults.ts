// The faults a test switches on, as real BMCs show them: slow answers, server errors for a
// while, resets accepted and never carried out. (Expired sessions: SessionStore.expireAll.)

export class FaultSwitches {
  /** Every answer waits this long first. */
  delayMs = 0;
  /** The next this-many requests answer failStatus (after the delay). */
  failuresLeft = 0;
  failStatus = 503;
  /** ComputerSystem.Reset answers 204 and nothing happens. */
  ignoreResets = false;

  /** Takes one failure, if any are left: the status to answer with. */
  takeFailure(): number | undefined {
    if (this.failuresLeft <= 0) return undefined;
    this.failuresLeft -= 1;
    return this.failStatus;
  }

  clear(): void {
    this.delayMs = 0;
    this.failuresLeft = 0;
    this.failStatus = 503;
    this.ignoreResets = false;
  }
}
