import { type BmaasConfig, type DeepPartial, loadConfig } from '@bmaas/common';

/** A validated configuration for tests: the environment is ignored, `overrides` applied over the defaults. */
export function testConfig(overrides: DeepPartial<BmaasConfig> = {}): BmaasConfig {
  return loadConfig({ env: {}, overrides });
}
