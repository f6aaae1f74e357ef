import { InvalidParameterValue } from '@bmaas/common';
import {
  BOOT_DEVICES,
  type BootDevice,
  type BootDeviceState,
  type ManagementInterface,
  type Task,
} from '@bmaas/driver-api';
import { bmcName, IPMI_PROPERTIES, parseIpmiDriverInfo } from './driver-info.js';
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
 * exit 0 when the BMC refuses a device: the runner reads its output.
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

  async injectNmi(task: Task): Promise<void> {
    const target = parseIpmiDriverInfo(task.node);
    await this.runner.run(target, ['power', 'diag']);
    task.logger.info('NMI injected', { bmc: bmcName(target) });
  }
}
