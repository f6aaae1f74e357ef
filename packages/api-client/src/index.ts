export * from './api-client.js';
export * from './ironic-fault.js';
