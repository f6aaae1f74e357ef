import { describe, expect, it } from 'vitest';
import { loadConfig } from './config/load.js';
import { applyGcSettings } from './gc-settings.js';

describe('applyGcSettings', () => {
  it('collects the young generation on the main thread alone by default', () => {
    const config = loadConfig({ configFiles: [], env: {} });
    const flags: string[] = [];
    applyGcSettings(config.DEFAULT, (flag) => flags.push(flag));
    expect(flags).toEqual(['--no-parallel-scavenge']);
  });

  it('leaves young collections parallel when [DEFAULT]parallel_young_gc is on', () => {
    const config = loadConfig({ configFiles: [], env: { BMAAS_DEFAULT__PARALLEL_YOUNG_GC: 'true' } });
    const flags: string[] = [];
    applyGcSettings(config.DEFAULT, (flag) => flags.push(flag));
    expect(flags).toEqual(['--parallel-scavenge']);
  });
});
