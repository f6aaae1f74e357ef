import {
  InvalidParameterValue,
  IPMIFailure,
  PowerState as Power,
  type PowerState,
  PowerStateFailure,
  until,
  WaitTimeoutError,
  waitFor,
} from '@bmaas/common';
import type { PowerInterface, Task } from '@bmaas/driver-api';
import { bmcName, IPMI_PROPERTIES, type IpmiTarget, parseIpmiDriverInfo } from './driver-info.js';
import type { IpmitoolRunner } from './ipmitool-runner.js';

export interface IpmitoolPowerOptions {
  runner: IpmitoolRunner;
  /** [conductor]power_state_change_timeout in seconds: default bound of a change's confirmation. */
  powerStateChangeTimeout: number;
  /** Pause between two status reads while waiting for a change (ms; the runner adds min_command_interval). */
  pollIntervalMs?: number;
}

/** The chassis control command of each step ('power soft' is the ACPI power button). */
type ChassisCommand = 'on' | 'off' | 'soft';

/**
 * Ironic's `ipmitool` power interface: chassis power through ipmitool. Every
 * change is sent, then confirmed by reading the power state until it holds
 * or the power timeout passes. Reboot is power off then on (the next boot
 * then follows the boot device set before); soft reboot is a soft power off
 * (the guest OS must honour the power button) then on.
 */
export class IpmitoolPowerInterface implements PowerInterface {
  constructor(private readonly options: IpmitoolPowerOptions) {}

  getProperties(): Record<string, string> {
    return { ...IPMI_PROPERTIES };
  }

  async validate(task: Task): Promise<void> {
    parseIpmiDriverInfo(task.node);
  }

  async getPowerState(task: Task): Promise<PowerState> {
    return this.readPowerState(parseIpmiDriverInfo(task.node));
  }

  async setPowerState(task: Task, state: PowerState, timeoutSeconds?: number): Promise<void> {
    const target = parseIpmiDriverInfo(task.node);
    const timeout = timeoutSeconds ?? this.options.powerStateChangeTimeout;
    const steps = STEPS[state];
    if (!steps) throw new InvalidParameterValue(`Unsupported power state ${state}.`);
    for (const step of steps) {
      await this.options.runner.run(target, ['power', step]);
      await this.waitFor(target, step === 'on' ? Power.ON : Power.OFF, timeout, state);
    }
    task.logger.info('power state changed', { target: state, bmc: bmcName(target) });
    await task.updateNode({ powerState: steps.at(-1) === 'on' ? Power.ON : Power.OFF, targetPowerState: null });
  }

  private async readPowerState(target: IpmiTarget): Promise<PowerState> {
    const { stdout } = await this.options.runner.run(target, ['power', 'status']);
    const match = /Chassis Power is (on|off)/i.exec(stdout);
    if (!match?.[1]) {
      throw new IPMIFailure(`BMC ${bmcName(target)} answered "power status" with unexpected output: ${stdout.trim()}`);
    }
    return match[1].toLowerCase() === 'on' ? Power.ON : Power.OFF;
  }

  /** Reads the power state until it is `wanted`; PowerStateFailure after `timeoutSeconds`. */
  private async waitFor(target: IpmiTarget, wanted: PowerState, timeoutSeconds: number, requested: PowerState) {
    let last: PowerState | undefined;
    try {
      await waitFor(
        `BMC ${bmcName(target)} to reach "${wanted}"`,
        until(async () => {
          last = await this.readPowerState(target);
          return last === wanted;
        }),
        { timeoutMs: timeoutSeconds * 1000, intervalMs: this.options.pollIntervalMs ?? 1000 },
      );
    } catch (error) {
      if (!(error instanceof WaitTimeoutError)) throw error;
      throw new PowerStateFailure(
        `BMC ${bmcName(target)} did not reach "${wanted}" within ${timeoutSeconds} s while setting "${requested}"; it reports "${last}".`,
      );
    }
  }
}

const STEPS: Partial<Record<PowerState, ChassisCommand[]>> = {
  [Power.ON]: ['on'],
  [Power.OFF]: ['off'],
  [Power.REBOOT]: ['off', 'on'],
  [Power.SOFT_POWER_OFF]: ['soft'],
  [Power.SOFT_REBOOT]: ['soft', 'on'],
};
