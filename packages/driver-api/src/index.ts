export * from './boot.js';
export * from './fake/index.js';
export * from './interfaces.js';
export * from './noop-management.js';
export * from './optional/index.js';
export * from './optional-interfaces.js';
export * from './rescue-steps.js';
export * from './task.js';
