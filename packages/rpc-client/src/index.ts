export * from './methods.js';
export * from './ring.js';
