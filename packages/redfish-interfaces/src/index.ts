import type {
  BiosInterface,
  FirmwareInterface,
  InspectInterface,
  InterfaceDeps,
  InterfaceDescriptor,
  ManagementInterface,
  PowerInterface,
} from '@bmaas/driver-api';
import { RedfishBiosInterface } from './redfish-bios.js';
import { RedfishClient } from './redfish-client.js';
import { REDFISH_SECTION, type RedfishSettings } from './redfish-config.js';
import { RedfishFirmwareInterface } from './redfish-firmware.js';
import { RedfishInspectInterface } from './redfish-inspect.js';
import { RedfishManagementInterface } from './redfish-management.js';
import type { RedfishDeps } from './redfish-node.js';
import { RedfishPowerInterface } from './redfish-power.js';

export {
  bmcName,
  parseRedfishDriverInfo,
  REDFISH_PROPERTIES,
  type RedfishAuthType,
  type RedfishTarget,
} from './driver-info.js';
export { RedfishBiosInterface } from './redfish-bios.js';
export { odataId, RedfishClient, type RedfishClientOptions, type RedfishResource } from './redfish-client.js';
export { REDFISH_OPTIONS, REDFISH_SECTION, type RedfishSettings } from './redfish-config.js';
export { RedfishFirmwareInterface } from './redfish-firmware.js';
export { RedfishInspectInterface } from './redfish-inspect.js';
export { etagOf, RedfishManagementInterface } from './redfish-management.js';
export { objectAt, type RedfishDeps, RedfishNode, stringsAt } from './redfish-node.js';
export { RedfishPowerInterface } from './redfish-power.js';

/**
 * One client per conductor configuration (its frozen [redfish] section),
 * shared by every redfish interface: requests to one BMC count against one
 * limit and share one session whichever interface sends them.
 */
const clients = new WeakMap<RedfishSettings, RedfishClient>();

/** What a redfish interface is made with, the conductor's one client among it: for the interfaces of other packages too (redfish-https). */
export function redfishDepsOf(deps: InterfaceDeps<RedfishSettings>): RedfishDeps {
  let client = clients.get(deps.settings);
  if (!client) {
    client = new RedfishClient({ settings: deps.settings, logger: deps.logger.child({ component: 'redfish' }) });
    clients.set(deps.settings, client);
  }
  return { client, settings: deps.settings, powerStateChangeTimeout: deps.powerStateChangeTimeout };
}

export const redfishPowerInterface: InterfaceDescriptor<PowerInterface, typeof REDFISH_SECTION.options> = {
  name: 'redfish',
  config: REDFISH_SECTION,
  create: (deps) => new RedfishPowerInterface(redfishDepsOf(deps)),
};

export const redfishManagementInterface: InterfaceDescriptor<ManagementInterface, typeof REDFISH_SECTION.options> = {
  name: 'redfish',
  config: REDFISH_SECTION,
  create: (deps) => new RedfishManagementInterface(redfishDepsOf(deps)),
};

export const redfishInspectInterface: InterfaceDescriptor<InspectInterface, typeof REDFISH_SECTION.options> = {
  name: 'redfish',
  config: REDFISH_SECTION,
  create: (deps) => new RedfishInspectInterface(redfishDepsOf(deps)),
};

export const redfishBiosInterface: InterfaceDescriptor<BiosInterface, typeof REDFISH_SECTION.options> = {
  name: 'redfish',
  config: REDFISH_SECTION,
  create: (deps) => new RedfishBiosInterface(redfishDepsOf(deps)),
};

export const redfishFirmwareInterface: InterfaceDescriptor<FirmwareInterface, typeof REDFISH_SECTION.options> = {
  name: 'redfish',
  config: REDFISH_SECTION,
  create: (deps) => new RedfishFirmwareInterface(redfishDepsOf(deps)),
};

/**
 * Upstream's `redfish` hardware type: what it supports of each kind,
 * preferred first (the registry lists it with the others). Network boot
 * as `ipmi`, through any boot interface that declares networkBoot.
 */
export const REDFISH_HARDWARE_TYPE = {
  name: 'redfish',
  supported: {
    deploy: ['direct'],
    power: ['redfish'],
    management: ['redfish', 'noop'],
    inspect: ['redfish', 'agent', 'no-inspect'],
    bios: ['redfish', 'no-bios'],
    firmware: ['redfish', 'no-firmware'],
  },
} as const;
