import { createSilentLogger, type DeepPartial, loadConfig } from '@bmaas/common';
import type { InterfaceDeps } from '@bmaas/driver-api';
import { createHttpRootFixture, type HttpRootFixture } from '@bmaas/http-root/testing';
import { GrubBootInterface } from '../grub-boot.js';
import type { GrubSettings } from '../grub-options.js';

export interface GrubFixture extends HttpRootFixture {
  iface: GrubBootInterface;
  deps: InterfaceDeps<GrubSettings>;
}

/** A grub interface over a fresh temporary http_root, with local images for both ramdisks. */
export async function createGrubFixture(
  overrides: DeepPartial<InterfaceDeps<GrubSettings>> = {},
): Promise<GrubFixture> {
  const root = await createHttpRootFixture('bmaas-grub-');
  const defaults = loadConfig({ env: {} });
  const deps: InterfaceDeps<GrubSettings> = {
    settings: { kernel_append_params: null, ...overrides.settings },
    coreSettings: {},
    discovery: { ...defaults.discovery, ...overrides.discovery },
    deploy: { ...defaults.deploy, http_root: root.httpRoot, http_url: 'http://192.0.2.10:8080', ...overrides.deploy },
    apiPublicEndpoint:
      overrides.apiPublicEndpoint === undefined ? 'http://192.0.2.1:6385' : overrides.apiPublicEndpoint,
    inspectionCallbackEndpoint: null,
    fileUrlAllowedPaths: [root.imagesDir],
    powerStateChangeTimeout: 60,
    logger: createSilentLogger(),
    conductorHostname: 'conductor-1',
  };
  return { ...root, deps, iface: new GrubBootInterface(deps) };
}
