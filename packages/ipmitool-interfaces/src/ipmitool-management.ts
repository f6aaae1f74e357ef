import { type HealthState, InvalidParameterValue } from '@bmaas/common';
import {
  BOOT_DEVICES,
  type BootDevice,
  type BootDeviceState,
  type ManagementInterface,
  type Task,
} from '@bmaas/driver-api';
import { bmcName, IPMI_PROPERTIES, parseIpmiDriverInfo } from './driver-info.js';
import { healthFromChassisStatus, healthFromSensors, worseHealth } from './ipmi-health.js';
import type { IpmitoolRunner } from './ipmitool-runner.js';

/** "Boot Device Selector : …" of `chassis bootparam get 5`, as ipmitool prints it. */
const SELECTORS: ReadonlyArray<[RegExp, BootDevice | null]> = [
  [/Force PXE/i, 'pxe'],
  [/Force Boot from default Hard-Drive(, request Safe-Mode)?/i, 'disk'],
  [/Force Boot from CD\/DVD/i, 'cdrom'],
  [/Force Boot into BIOS Setup/i, 'bios'],
  [/No override/i, null],
];

/**
 * Ironic's `ipmitool` management interface: the next boot device through
 * `chassis bootdev` (Set System Boot Options, parameter 5), read back with
 * `chassis bootparam get 5`, and the NMI through `power diag`. ipmitool may
 * exit 0 when the BMC refuses a device: the runner reads its output. The
 * node's health (1.109) is the worse of the chassis faults (`chassis
 * status`) and the sensors' threshold states (`sdr elist`).
 */
export class IpmitoolManagementInterface implements ManagementInterface {
  constructor(private readonly runner: IpmitoolRunner) {}

  getProperties(): Record<string, string> {
    return { ...IPMI_PROPERTIES };
  }

  async validate(task: Task): Promise<void> {
    parseIpmiDriverInfo(task.node);
  }

  async getSupportedBootDevices(_task: Task): Promise<BootDevice[]> {
    return [...BOOT_DEVICES];
  }

  async setBootDevice(task: Task, device: BootDevice, persistent: boolean): Promise<void> {
    if (!BOOT_DEVICES.includes(device)) {
      throw new InvalidParameterValue(`Invalid boot device ${device}, supported: ${BOOT_DEVICES.join(', ')}.`);
    }
    const target = parseIpmiDriverInfo(task.node);
    await this.runner.run(target, ['chassis', 'bootdev', device, ...(persistent ? ['options=persistent'] : [])]);
    task.logger.info('boot device set', { device, persistent, bmc: bmcName(target) });
  }

  async getBootDevice(task: Task): Promise<BootDeviceState> {
    const { stdout } = await this.runner.run(parseIpmiDriverInfo(task.node), ['chassis', 'bootparam', 'get', '5']);
    const selector = /Boot Device Selector\s*:\s*(.*)/i.exec(stdout)?.[1] ?? '';
    const known = SELECTORS.find(([pattern]) => pattern.test(selector));
    return {
      bootDevice: known ? known[1] : null,
      persistent: /Options apply to all future boots/i.test(stdout),
    };
  }

  /** Two ipmitool runs: `chassis status` (faults), then `sdr elist` (sensor thresholds); the worse state wins. */
  async getHealth(task: Task): Promise<HealthState | null> {
    const target = parseIpmiDriverInfo(task.node);
    const chassis = healthFromChassisStatus((await this.runner.run(target, ['chassis', 'status'])).stdout);
    const sensors = healthFromSensors((await this.runner.run(target, ['sdr', 'elist'])).stdout);
    return worseHealth(chassis, sensors);
  }

  async injectNmi(task: Task): Promise<void> {
    const target = parseIpmiDriverInfo(task.node);
    await this.runner.run(target, ['power', 'diag']);
    task.logger.info('NMI injected', { bmc: bmcName(target) });
  }
}
