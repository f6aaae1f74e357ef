export { type Conductor, type ConductorDeps, createConductor } from './conductor.js';
export { type ConductorSetup, prepareConductor } from './conductor-setup.js';

export { createHttpFileServer, resolveInsideRoot } from './http-file-server.js';
export { type ConductorIdentity, conductorIdentity, DEFAULT_JSON_RPC_PORT } from './identity.js';
export { ConductorMetrics } from './metrics/conductor-metrics.js';
export { ProvisioningRunner } from './provisioning/runner.js';
export { RegistrationLease, type RegistrationLeaseOptions } from './registration-lease.js';
export { bootRootFiles, enabledBootDescriptors, textFileMatcher } from './registry/boot-descriptors.js';
export type { DriverCatalog, HardwareTypeDescriptor, InterfaceCatalog } from './registry/catalog.js';
export { DriverRegistry } from './registry/driver-registry.js';
export { DRIVER_CATALOG, INTERFACES } from './registry/enabled-interfaces.js';
export {
  loadConductorConfig,
  pluginConfigDefaults,
  pluginConfigSections,
  renderConductorConfigReference,
} from './registry/plugin-config.js';
export { type ConductorRpcHandlers, ConductorRpcServer, jsonResponseHeaders } from './rpc/json-rpc-server.js';
export { type AcquireOptions, type ConductorTask, TaskManager } from './task-manager.js';
