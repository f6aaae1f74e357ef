export { BOOT_PATH_PATTERN, bootPath, macForIndex, sample, toHyphens } from './macs.js';
export { renderNginxConfig } from './nginx.js';
export { type BenchOptions, parseBenchOptions } from './options.js';
export { cpuSeconds, ResourceMonitor, rssKilobytes } from './process-stats.js';
export { median, ratiosOf, renderReport, summariesOf } from './report.js';
export { createStaticBootFileServer } from './static-file-server.js';
export { parseWrkOutput, renderWrkScript } from './wrk-script.js';
