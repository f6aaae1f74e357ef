import { isAbsolute } from 'node:path';
import { InvalidParameterValue, MissingParameterValue, PowerState as Power, type PowerState } from '@bmaas/common';
import type { InterfaceDeps, InterfaceDescriptor, PowerInterface, Task } from '@bmaas/driver-api';
import { type QmpClient, withQmp } from './qmp-client.js';

const SOCKET_KEY = 'qemu_qmp_socket';
const QMP_TIMEOUT_MS = 5000;
const SOFT_POWER_OFF_WAIT_MS = 30_000;

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
  getProperties(): Record<string, string> {
    return { [SOCKET_KEY]: "Absolute path of the QEMU machine's QMP unix socket. Required." };
  }

  async validate(task: Task): Promise<void> {
    socketOf(task);
  }

  async getPowerState(task: Task): Promise<PowerState> {
    return withQmp(socketOf(task), QMP_TIMEOUT_MS, async (qmp) => ((await isRunning(qmp)) ? Power.ON : Power.OFF));
  }

  async setPowerState(task: Task, state: PowerState): Promise<void> {
    const socket = socketOf(task);
    switch (state) {
      case Power.ON:
        await withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
          if (await isRunning(qmp)) return;
          await qmp.execute('system_reset');
          await qmp.execute('cont');
        });
        break;
      case Power.OFF:
        await withQmp(socket, QMP_TIMEOUT_MS, hardOff);
        break;
      case Power.REBOOT:
      case Power.SOFT_REBOOT:
        await withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
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
    await withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
      if (!(await isRunning(qmp))) return;
      await qmp.execute('system_powerdown');
    });
    const deadline = Date.now() + SOFT_POWER_OFF_WAIT_MS;
    while (Date.now() < deadline) {
      if (!(await withQmp(socket, QMP_TIMEOUT_MS, isRunning))) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    await withQmp(socket, QMP_TIMEOUT_MS, hardOff);
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

export const qemuPowerInterface: InterfaceDescriptor<PowerInterface> = {
  name: 'qemu',
  create: (_deps: InterfaceDeps) => new QemuPowerInterface(),
};
