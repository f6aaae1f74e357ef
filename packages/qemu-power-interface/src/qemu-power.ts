import { isAbsolute } from 'node:path';
import {
  InvalidParameterValue,
  ignoreTimeout,
  MissingParameterValue,
  PowerState as Power,
  type PowerState,
  type SectionValues,
  until,
  waitFor,
} from '@bmaas/common';
import type { InterfaceDeps, InterfaceDescriptor, PowerInterface, Task } from '@bmaas/driver-api';
import { type QmpClient, withQmp } from './qmp-client.js';

const SOCKET_KEY = 'qemu_qmp_socket';

/** The `[qemu]` section, owned by this interface. */
export const QEMU_OPTIONS = {
  qmp_timeout: {
    doc: "Seconds one exchange with a machine's QMP socket (connect, greeting, command) may take.",
    format: 'positive-number',
    default: 5,
    env: 'BMAAS_QEMU__QMP_TIMEOUT',
  },
  soft_power_off_timeout: {
    doc: 'Seconds a soft power off waits for the guest to act on the ACPI power button before a hard power off.',
    format: 'positive-number',
    default: 30,
    env: 'BMAAS_QEMU__SOFT_POWER_OFF_TIMEOUT',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type QemuSettings = SectionValues<typeof QEMU_OPTIONS>;

/** QEMU run states (query-status) in which the machine counts as powered on. */
const RUNNING = new Set(['running', 'debug']);

/**
 * Powers a QEMU machine through its QMP socket, as a BMC powers real
 * hardware. The machine is started by whoever hosts it with
 * `-S -no-shutdown -qmp unix:<path>,server=on,wait=off`: it waits powered off,
 * and a guest power-off leaves QEMU alive in the `shutdown` state, so it can
 * be powered on again. Power off = stop + reset (the next power on boots from
 * scratch, like a real power cycle). Not with -no-reboot: QEMU then turns
 * every reset, the system_reset of a power on too, into a shutdown, and a
 * machine the guest powered off could never be powered on again.
 */
export class QemuPowerInterface implements PowerInterface {
  private readonly qmpTimeoutMs: number;
  private readonly softPowerOffMs: number;

  constructor(settings: QemuSettings) {
    this.qmpTimeoutMs = settings.qmp_timeout * 1000;
    this.softPowerOffMs = settings.soft_power_off_timeout * 1000;
  }

  getProperties(): Record<string, string> {
    return { [SOCKET_KEY]: "Absolute path of the QEMU machine's QMP unix socket. Required." };
  }

  async validate(task: Task): Promise<void> {
    socketOf(task);
  }

  async getPowerState(task: Task): Promise<PowerState> {
    return withQmp(socketOf(task), this.qmpTimeoutMs, async (qmp) => ((await isRunning(qmp)) ? Power.ON : Power.OFF));
  }

  async setPowerState(task: Task, state: PowerState): Promise<void> {
    const socket = socketOf(task);
    switch (state) {
      case Power.ON:
        await withQmp(socket, this.qmpTimeoutMs, async (qmp) => {
          if (await isRunning(qmp)) return;
          await qmp.execute('system_reset');
          await qmp.execute('cont');
        });
        break;
      case Power.OFF:
        await withQmp(socket, this.qmpTimeoutMs, hardOff);
        break;
      case Power.REBOOT:
      case Power.SOFT_REBOOT:
        await withQmp(socket, this.qmpTimeoutMs, async (qmp) => {
          await qmp.execute('system_reset');
          if (!(await isRunning(qmp))) await qmp.execute('cont');
        });
        break;
      case Power.SOFT_POWER_OFF:
        await this.softPowerOff(socket);
        break;
      default:
        throw new InvalidParameterValue(`Unsupported power state ${state}.`);
    }
    await task.updateNode({ powerState: settledState(state), targetPowerState: null });
  }

  /** ACPI power button, then a hard power off if the guest ignores it. */
  private async softPowerOff(socket: string): Promise<void> {
    await withQmp(socket, this.qmpTimeoutMs, async (qmp) => {
      if (!(await isRunning(qmp))) return;
      await qmp.execute('system_powerdown');
    });
    const off = await waitFor(
      `the machine of ${socket} to power off`,
      until(async () => !(await withQmp(socket, this.qmpTimeoutMs, isRunning))),
      { timeoutMs: this.softPowerOffMs, intervalMs: 500 },
    ).catch(ignoreTimeout);
    if (!off) await withQmp(socket, this.qmpTimeoutMs, hardOff);
  }
}

function settledState(requested: PowerState): PowerState {
  return requested === Power.OFF || requested === Power.SOFT_POWER_OFF ? Power.OFF : Power.ON;
}

async function isRunning(qmp: QmpClient): Promise<boolean> {
  const status = await qmp.execute<{ status: string }>('query-status');
  return RUNNING.has(status.status);
}

async function hardOff(qmp: QmpClient): Promise<void> {
  if (await isRunning(qmp)) await qmp.execute('stop');
  await qmp.execute('system_reset');
}

function socketOf(task: Task): string {
  const socket = task.node.driverInfo[SOCKET_KEY];
  if (socket === undefined || socket === null || socket === '') {
    throw new MissingParameterValue(`Node ${task.node.uuid} is missing driver_info.${SOCKET_KEY}.`);
  }
  if (typeof socket !== 'string' || !isAbsolute(socket)) {
    throw new InvalidParameterValue(
      `driver_info.${SOCKET_KEY} must be an absolute path, got ${JSON.stringify(socket)}.`,
    );
  }
  return socket;
}

/** The `qemu` power interface, for the conductor's registry: its [qemu] options. */
export const qemuPowerInterface: InterfaceDescriptor<PowerInterface, typeof QEMU_OPTIONS> = {
  name: 'qemu',
  config: { section: 'qemu', options: QEMU_OPTIONS },
  create: (deps: InterfaceDeps<QemuSettings>) => new QemuPowerInterface(deps.settings),
};
