export * from './boot-interface-contract.js';
export * from './test-task.js';
