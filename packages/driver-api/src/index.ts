export * from './boot.js';
export * from './fake/index.js';
export * from './interfaces.js';
export * from './noop-management.js';
export * from './task.js';
