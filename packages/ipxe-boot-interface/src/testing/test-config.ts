import { type BmaasConfig, createSilentLogger, type DeepPartial, loadConfig, pluginSection } from '@bmaas/common';
import type { InterfaceDeps } from '@bmaas/driver-api';
import { type IpxeConfig, PXE_OPTIONS, type PxeSettings } from '../ipxe-config.js';

export type IpxeTestOverrides = DeepPartial<BmaasConfig> & { pxe?: Partial<PxeSettings> };

/** A validated configuration for tests (core and [pxe]): the environment is ignored, `overrides` applied over the defaults. */
export function testConfig(overrides: IpxeTestOverrides = {}): BmaasConfig & IpxeConfig {
  const config = loadConfig({ env: {}, overrides, pluginSections: { pxe: PXE_OPTIONS } });
  return { ...config, pxe: pluginSection<typeof PXE_OPTIONS>(config, 'pxe') };
}

/** What the registry would create the interface with, from such a configuration. */
export function testDeps(config: BmaasConfig & IpxeConfig): InterfaceDeps<PxeSettings> {
  return {
    settings: config.pxe,
    coreSettings: {},
    deploy: config.deploy,
    discovery: config.discovery,
    apiPublicEndpoint: config.api.public_endpoint,
    inspectionCallbackEndpoint: config.inspector.callback_endpoint_override ?? config.api.public_endpoint,
    fileUrlAllowedPaths: config.conductor.file_url_allowed_paths,
    powerStateChangeTimeout: 60,
    logger: createSilentLogger(),
    conductorHostname: 'conductor-1',
  };
}
