export { type ApiDeps, createApp, UNVERSIONED_PREFIXES } from './app.js';
export { HtpasswdUsers } from './htpasswd.js';
export { MAX_VERSION, MIN_VERSION } from './versions.js';
