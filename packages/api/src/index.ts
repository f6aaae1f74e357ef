export { type ApiDeps, createApiListener, createApp, UNVERSIONED_PREFIXES } from './app.js';
export { MAX_VERSION, MIN_VERSION } from './versions.js';
