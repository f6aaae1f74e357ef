export { type ApiDeps, createApiListener, createApp, UNVERSIONED_PREFIXES } from './app.js';
export type { BootRequestEvent, BootRequestObserver } from './boot/boot-request-observer.js';
export { ApiMetrics } from './metrics/api-metrics.js';
export { MAX_VERSION, MIN_VERSION } from './versions.js';
