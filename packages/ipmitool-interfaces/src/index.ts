import type { BmaasConfig } from '@bmaas/common';
import type { InterfaceDeps, InterfaceDescriptor, ManagementInterface, PowerInterface } from '@bmaas/driver-api';
import { IpmitoolManagementInterface } from './ipmitool-management.js';
import { IpmitoolPowerInterface } from './ipmitool-power.js';
import { IpmitoolRunner } from './ipmitool-runner.js';

export { bmcName, IPMI_PROPERTIES, type IpmiTarget, parseIpmiDriverInfo } from './driver-info.js';
export { IpmitoolManagementInterface } from './ipmitool-management.js';
export { IpmitoolPowerInterface } from './ipmitool-power.js';
export { type IpmitoolOutput, IpmitoolRunner, type IpmitoolRunnerOptions } from './ipmitool-runner.js';
export { withPasswordFile } from './password-file.js';

/**
 * One runner per conductor configuration, shared by its power and management
 * interfaces: commands to one BMC must queue behind each other whichever
 * interface sends them.
 */
const runners = new WeakMap<BmaasConfig, IpmitoolRunner>();

function runnerFor(deps: InterfaceDeps): IpmitoolRunner {
  let runner = runners.get(deps.config);
  if (!runner) {
    const { ipmi } = deps.config;
    runner = new IpmitoolRunner({
      ipmitoolPath: ipmi.ipmitool_path,
      commandRetryTimeoutMs: ipmi.command_retry_timeout * 1000,
      minCommandIntervalMs: Math.max(0, ipmi.min_command_interval) * 1000,
      lanTimeoutSeconds: ipmi.lan_timeout,
      logger: deps.logger.child({ component: 'ipmitool' }),
    });
    runners.set(deps.config, runner);
  }
  return runner;
}

export const ipmitoolPowerInterface: InterfaceDescriptor<PowerInterface> = {
  name: 'ipmitool',
  create: (deps) =>
    new IpmitoolPowerInterface({
      runner: runnerFor(deps),
      powerStateChangeTimeout: deps.config.conductor.power_state_change_timeout,
    }),
};

export const ipmitoolManagementInterface: InterfaceDescriptor<ManagementInterface> = {
  name: 'ipmitool',
  create: (deps) => new IpmitoolManagementInterface(runnerFor(deps)),
};
