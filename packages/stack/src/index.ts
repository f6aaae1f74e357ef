export { loadConductorConfig } from '@bmaas/conductor';
export { conductorCertificate, jsonRpcTlsEnvironment, writeJsonRpcTlsConfig } from './json-rpc-tls.js';
export {
  endpointsFile,
  labImagesDir,
  MACHINE_FACING_HOST,
  MACHINE_KERNEL_APPEND_PARAMS,
  type StackEndpoints,
  writeMachineConfig,
} from './machine-config.js';
export { loopbackStackOptions, parseStackOptions, type StackOptions } from './options.js';
export {
  acquireLock,
  lockHolder,
  processRunning,
  processStartTime,
  procStat,
  procStatFields,
} from './pid-lock.js';
export { assertPortsFree, type PortClaim, StackStartRefused } from './port-check.js';
export {
  apiEnvironment,
  type ConductorPlacement,
  conductorEnvironment,
  environmentWithoutSettings,
} from './service-environment.js';
export {
  API_MAIN,
  CONDUCTOR_MAIN,
  type ConductorProcess,
  type ConductorStart,
  Services,
  type ServicesOptions,
  type StartServicesOptions,
  startServices,
} from './services.js';
export { type ConductorEndpoint, SERVER_NODE_FLAGS, Stack, type StackDeps, StackStopped } from './stack.js';
export {
  type ExitStatus,
  type LogLine,
  type Spawner,
  StackProcess,
  type StackProcessOptions,
} from './stack-process.js';
export { runStack, runStackCommand } from './supervisor.js';
