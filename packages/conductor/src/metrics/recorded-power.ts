import type { PowerState } from '@bmaas/common';
import type { PowerInterface, Task } from '@bmaas/driver-api';

/** Hears of every power change asked of a power interface, and whether it held. */
export interface PowerActionObserver {
  powerActionDone(interfaceName: string, target: PowerState, succeeded: boolean): void;
}

/**
 * A power interface as the registry hands it out when power actions are
 * recorded: every call goes to the enabled implementation unchanged, and
 * each setPowerState is reported once it ended (metrics).
 */
export class RecordedPowerInterface implements PowerInterface {
  constructor(
    private readonly inner: PowerInterface,
    private readonly interfaceName: string,
    private readonly observer: PowerActionObserver,
  ) {}

  getProperties(): Record<string, string> {
    return this.inner.getProperties();
  }

  validate(task: Task): Promise<void> {
    return this.inner.validate(task);
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }

  getPowerState(task: Task): Promise<PowerState | null> {
    return this.inner.getPowerState(task);
  }

  async setPowerState(task: Task, state: PowerState, timeoutSeconds?: number): Promise<void> {
    try {
      await this.inner.setPowerState(task, state, timeoutSeconds);
    } catch (error) {
      this.observer.powerActionDone(this.interfaceName, state, false);
      throw error;
    }
    this.observer.powerActionDone(this.interfaceName, state, true);
  }
}
