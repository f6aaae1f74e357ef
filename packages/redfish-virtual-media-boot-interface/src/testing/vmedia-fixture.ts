import { createSilentLogger, type DeepPartial, loadConfig } from '@bmaas/common';
import type { InterfaceDeps } from '@bmaas/driver-api';
import { createHttpRootFixture, type HttpRootFixture } from '@bmaas/http-root/testing';
import { RedfishVirtualMediaBootInterface } from '../vmedia-boot.js';
import type { VmediaDeploySettings } from '../vmedia-options.js';

type VmediaDeps = InterfaceDeps<{ kernel_append_params: string | null }, { deploy: VmediaDeploySettings }>;

export interface VmediaFixture extends HttpRootFixture {
  iface: RedfishVirtualMediaBootInterface;
  deps: VmediaDeps;
}

/** A redfish-virtual-media interface over a fresh temporary http_root, with local images for both ramdisks. */
export async function createVmediaFixture(overrides: DeepPartial<VmediaDeps> = {}): Promise<VmediaFixture> {
  const root = await createHttpRootFixture('bmaas-vmedia-');
  const defaults = loadConfig({ env: {} });
  const deps: VmediaDeps = {
    settings: { kernel_append_params: null, ...overrides.settings },
    coreSettings: {
      deploy: { ramdisk_image_download_source: 'local', external_http_url: null, ...overrides.coreSettings?.deploy },
    },
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
  return { ...root, deps, iface: new RedfishVirtualMediaBootInterface(deps) };
}
