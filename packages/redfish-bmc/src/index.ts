export { createRedfishApp, type RedfishAppDeps } from './app.js';
export { type BiosAttributeRule, DEFAULT_BIOS_RULES } from './bios-registry.js';
export { FaultSwitches } from './faults.js';
export {
  DEFAULT_FLEET_LATENCY,
  type FleetBmc,
  type FleetStats,
  fleetAddress,
  type LatencyDistribution,
  latencyDraw,
  type RedfishFleet,
  type RedfishFleetOptions,
  startRedfishFleet,
} from './fleet.js';
export { FLEET_USAGE, parseFleetOptions } from './fleet-options.js';
export {
  BOOT_SOURCES,
  type BootMode,
  type BootRequest,
  type BootSource,
  type MachinePower,
  RESET_TYPES,
  type RedfishPowerState,
  type ResetType,
  resetBoots,
} from './machine-power.js';
export {
  type BiosValue,
  type BootOverride,
  DEFAULT_BIOS_ATTRIBUTES,
  type DiskSpec,
  type FirmwareComponent,
  type Health,
  ManagedSystem,
  type ProcessorSpec,
  type ServiceSettings,
  type SystemHardware,
  type SystemOptions,
} from './managed-system.js';
export { SCHEMA_VERSIONS } from './odata.js';
export { type QemuBackendOptions, QemuCdDrive, QemuMachineBackend } from './qemu-backend.js';
export {
  type RedfishBmc,
  type RedfishBmcControl,
  type RedfishBmcOptions,
  type RequestRecord,
  startRedfishBmc,
} from './redfish-bmc.js';
export { SimulatedMachinePower, type SimulatedPowerOptions } from './simulated-power.js';
export { HTTP_BOOT_OPTION, readGlobalVariables, setHttpBootNext, uriOfLoadOption } from './uefi-vars.js';
export {
  type MachineCdDrive,
  SimulatedCdDrive,
  VIRTUAL_CD_ID,
  VirtualCd,
  type VirtualMediaSettings,
  type VirtualMediaState,
} from './virtual-media.js';
