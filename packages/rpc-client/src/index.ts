export * from './client.js';
export * from './methods.js';
export * from './ring.js';
