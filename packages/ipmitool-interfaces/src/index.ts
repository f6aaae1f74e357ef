import type { InterfaceDeps, InterfaceDescriptor, ManagementInterface, PowerInterface } from '@bmaas/driver-api';
import { IPMI_SECTION, type IpmiSettings } from './ipmi-config.js';
import { IpmitoolManagementInterface } from './ipmitool-management.js';
import { IpmitoolPowerInterface } from './ipmitool-power.js';
import { IpmitoolRunner } from './ipmitool-runner.js';

export { bmcName, IPMI_PROPERTIES, type IpmiTarget, parseIpmiDriverInfo } from './driver-info.js';
export { IPMI_OPTIONS, IPMI_SECTION, type IpmiSettings } from './ipmi-config.js';
export { IpmitoolManagementInterface } from './ipmitool-management.js';
export { IpmitoolPowerInterface } from './ipmitool-power.js';
export { type IpmitoolOutput, IpmitoolRunner, type IpmitoolRunnerOptions } from './ipmitool-runner.js';
export { withPasswordFile } from './password-file.js';

/**
 * One runner per conductor configuration (its frozen [ipmi] section), shared
 * by its power and management interfaces: commands to one BMC must queue
 * behind each other whichever interface sends them.
 */
const runners = new WeakMap<IpmiSettings, IpmitoolRunner>();

function runnerFor(deps: InterfaceDeps<IpmiSettings>): IpmitoolRunner {
  const ipmi = deps.settings;
  let runner = runners.get(ipmi);
  if (!runner) {
    runner = new IpmitoolRunner({
      ipmitoolPath: ipmi.ipmitool_path,
      commandRetryTimeoutMs: ipmi.command_retry_timeout * 1000,
      minCommandIntervalMs: Math.max(0, ipmi.min_command_interval) * 1000,
      lanTimeoutSeconds: ipmi.lan_timeout,
      logger: deps.logger.child({ component: 'ipmitool' }),
    });
    runners.set(ipmi, runner);
  }
  return runner;
}

export const ipmitoolPowerInterface: InterfaceDescriptor<PowerInterface, typeof IPMI_SECTION.options> = {
  name: 'ipmitool',
  config: IPMI_SECTION,
  create: (deps) =>
    new IpmitoolPowerInterface({
      runner: runnerFor(deps),
      powerStateChangeTimeout: deps.powerStateChangeTimeout,
    }),
};

export const ipmitoolManagementInterface: InterfaceDescriptor<ManagementInterface, typeof IPMI_SECTION.options> = {
  name: 'ipmitool',
  config: IPMI_SECTION,
  create: (deps) => new IpmitoolManagementInterface(runnerFor(deps)),
};
