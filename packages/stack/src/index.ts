export { parseStackOptions, type StackOptions } from './options.js';
export { acquireLock, lockHolder } from './pid-lock.js';
export { type ConductorEndpoint, Stack, type StackDeps } from './stack.js';
