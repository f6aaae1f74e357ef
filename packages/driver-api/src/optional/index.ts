export * from './catalog.js';
export * from './fake.js';
export * from './generic.js';
export * from './raid-config.js';
