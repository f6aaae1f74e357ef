export * from './boot-interface-contract.js';
export * from './interface-deps.js';
export * from './test-task.js';
