import { createSilentLogger, loadConfig } from '@bmaas/common';
import type { InterfaceDeps } from '../task.js';

/**
 * What the registry would create an interface with under the default
 * configuration, `settings` as its own section (and `overrides.coreSettings`
 * its options of core sections): for interface tests.
 */
export function createTestInterfaceDeps<
  S = Readonly<Record<string, unknown>>,
  C = Readonly<Record<string, Readonly<Record<string, unknown>>>>,
>(settings: S, overrides: Partial<InterfaceDeps<S, C>> & { coreSettings?: C } = {}): InterfaceDeps<S, C> {
  const config = loadConfig({ env: {} });
  return {
    settings,
    coreSettings: {} as C,
    deploy: config.deploy,
    discovery: config.discovery,
    apiPublicEndpoint: null,
    inspectionCallbackEndpoint: null,
    fileUrlAllowedPaths: config.conductor.file_url_allowed_paths,
    powerStateChangeTimeout: config.conductor.power_state_change_timeout,
    logger: createSilentLogger(),
    conductorHostname: 'test',
    ...overrides,
  };
}
