export * from './config/load.js';
export { renderConfigReference } from './config/reference.js';
export { configSchema } from './config/schema.js';
export * from './errors.js';
export { renderErrorReference } from './errors-reference.js';
export * from './logging.js';
export * from './mac.js';
export * from './records.js';
export * from './states.js';
