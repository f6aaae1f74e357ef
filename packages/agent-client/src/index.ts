export * from './agent-client.js';
export * from './agent-errors.js';
export * from './agent-options.js';
