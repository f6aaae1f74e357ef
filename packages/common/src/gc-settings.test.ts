import { describe, expect, it } from 'vitest';
import { loadConfig } from './config/load.js';
import { applyGcSettings } from './gc-settings.js';

describe('applyGcSettings', () => {
  it("leaves young collections parallel by default, as V8's own default, with pretenuring off", () => {
    const config = loadConfig({ configFiles: [], env: {} });
    const flags: string[] = [];
    applyGcSettings(config.DEFAULT, (flag) => flags.push(flag));
    expect(flags).toEqual(['--no-allocation-site-pretenuring', '--parallel-scavenge']);
  });

  it('collects the young generation on the main thread alone when [DEFAULT]parallel_young_gc is off', () => {
    const config = loadConfig({ configFiles: [], env: { BMAAS_DEFAULT__PARALLEL_YOUNG_GC: 'false' } });
    const flags: string[] = [];
    applyGcSettings(config.DEFAULT, (flag) => flags.push(flag));
    expect(flags).toEqual(['--no-allocation-site-pretenuring', '--no-parallel-scavenge']);
  });
});
