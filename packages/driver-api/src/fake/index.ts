export * from './fake-boot.js';
export * from './fake-deploy.js';
export * from './fake-indicators.js';
export * from './fake-management.js';
export * from './fake-power.js';
