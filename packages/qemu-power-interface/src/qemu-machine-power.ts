// Powering one QEMU machine through its QMP socket, as a BMC powers real hardware: the one
// place that knows which QMP commands mean power on, off, reset and the power button. The
// `qemu` power interface and the lab's Redfish BMC both drive machines with it.
import { ignoreTimeout, until, waitFor } from '@bmaas/common';
import { type QmpClient, withQmp } from './qmp-client.js';

/** QEMU run states (query-status) in which the machine counts as powered on. */
const RUNNING = new Set(['running', 'debug']);

/**
 * The machine is started by whoever hosts it with
 * `-S -no-shutdown -qmp unix:<path>,server=on,wait=off`: it waits powered off,
 * and a guest power-off leaves QEMU alive in the `shutdown` state, so it can
 * be powered on again. Power off = stop + reset (the next power on boots from
 * scratch, like a real power cycle). Not with -no-reboot: QEMU then turns
 * every reset, the system_reset of a power on too, into a shutdown, and a
 * machine the guest powered off could never be powered on again.
 *
 * Each operation opens its own short QMP session (QEMU serves one client per
 * socket), bounded by `qmpTimeoutMs`.
 */
export class QemuMachinePower {
  constructor(
    readonly socket: string,
    private readonly qmpTimeoutMs: number,
  ) {}

  isOn(): Promise<boolean> {
    return withQmp(this.socket, this.qmpTimeoutMs, isRunning);
  }

  /**
   * Powers on from scratch unless already on. `beforeStart` runs in the same QMP session
   * after the reset and before the CPUs run: where the boot device is chosen.
   */
  powerOn(beforeStart?: (qmp: QmpClient) => Promise<void>): Promise<void> {
    return withQmp(this.socket, this.qmpTimeoutMs, async (qmp) => {
      if (await isRunning(qmp)) return;
      await beforeStart?.(qmp);
      await reset(qmp, this.qmpTimeoutMs);
      await qmp.execute('cont');
    });
  }

  /** Hard power off: the CPUs stop and the machine is reset, ready to boot from scratch. */
  powerOff(): Promise<void> {
    return withQmp(this.socket, this.qmpTimeoutMs, (qmp) => hardOff(qmp, this.qmpTimeoutMs));
  }

  /** A hard reset; a machine that was off is powered on by it. `beforeStart` as for powerOn. */
  reboot(beforeStart?: (qmp: QmpClient) => Promise<void>): Promise<void> {
    return withQmp(this.socket, this.qmpTimeoutMs, async (qmp) => {
      await beforeStart?.(qmp);
      await reset(qmp, this.qmpTimeoutMs);
      if (!(await isRunning(qmp))) await qmp.execute('cont');
    });
  }

  /** The ACPI power button: the guest decides what to do. Nothing when the machine is off. */
  pressPowerButton(): Promise<void> {
    return withQmp(this.socket, this.qmpTimeoutMs, async (qmp) => {
      if (await isRunning(qmp)) await qmp.execute('system_powerdown');
    });
  }

  /** A non-maskable interrupt to every CPU. */
  injectNmi(): Promise<void> {
    return withQmp(this.socket, this.qmpTimeoutMs, async (qmp) => {
      await qmp.execute('inject-nmi');
    });
  }

  /** The power button, then a hard power off if the guest has not powered off within `graceMs`. */
  async softPowerOff(graceMs: number): Promise<void> {
    await this.pressPowerButton();
    const off = await waitFor(
      `the machine of ${this.socket} to power off`,
      until(async () => !(await this.isOn())),
      { timeoutMs: graceMs, intervalMs: 500 },
    ).catch(ignoreTimeout);
    if (!off) await this.powerOff();
  }
}

async function isRunning(qmp: QmpClient): Promise<boolean> {
  const status = await qmp.execute<{ status: string }>('query-status');
  return RUNNING.has(status.status);
}

async function hardOff(qmp: QmpClient, timeoutMs: number): Promise<void> {
  if (await isRunning(qmp)) await qmp.execute('stop');
  await reset(qmp, timeoutMs);
}

/**
 * system_reset, returning once QEMU has carried it out (its RESET event): QEMU answers the
 * command at once and resets later in its main loop, when it also hands the firmware the
 * boot order of that moment.
 */
async function reset(qmp: QmpClient, timeoutMs: number): Promise<void> {
  await qmp.execute('system_reset');
  await qmp.waitForEvent('RESET', timeoutMs);
}
