import { isAbsolute } from 'node:path';
import {
  InvalidParameterValue,
  MissingParameterValue,
  PowerState as Power,
  type PowerState,
  type SectionValues,
} from '@bmaas/common';
import type { InterfaceDeps, InterfaceDescriptor, PowerInterface, Task } from '@bmaas/driver-api';
import { QemuMachinePower } from './qemu-machine-power.js';

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

/**
 * Powers a QEMU machine through its QMP socket (QemuMachinePower: how the machine is
 * started and what each power state means in QMP commands).
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
    return (await this.machine(task).isOn()) ? Power.ON : Power.OFF;
  }

  async setPowerState(task: Task, state: PowerState): Promise<void> {
    const machine = this.machine(task);
    switch (state) {
      case Power.ON:
        await machine.powerOn();
        break;
      case Power.OFF:
        await machine.powerOff();
        break;
      case Power.REBOOT:
      case Power.SOFT_REBOOT:
        await machine.reboot();
        break;
      case Power.SOFT_POWER_OFF:
        await machine.softPowerOff(this.softPowerOffMs);
        break;
      default:
        throw new InvalidParameterValue(`Unsupported power state ${state}.`);
    }
    await task.updateNode({ powerState: settledState(state), targetPowerState: null });
  }

  private machine(task: Task): QemuMachinePower {
    return new QemuMachinePower(socketOf(task), this.qmpTimeoutMs);
  }
}

function settledState(requested: PowerState): PowerState {
  return requested === Power.OFF || requested === Power.SOFT_POWER_OFF ? Power.OFF : Power.ON;
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
