export * from './client.js';
export * from './fake-client.js';
export * from './json-rpc-client.js';
export * from './methods.js';
export * from './ring.js';
export * from './rpc-call-metrics.js';
