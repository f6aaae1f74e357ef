import { createSilentLogger, loadConfig } from '@bmaas/common';
import type { InterfaceDeps } from '@bmaas/driver-api';
import { createHttpRootFixture, type HttpRootFixture } from '@bmaas/http-root/testing';
import { type RedfishBmc, SimulatedMachinePower, startRedfishBmc } from '@bmaas/redfish-bmc';
import { RedfishClient, type RedfishSettings } from '@bmaas/redfish-interfaces';
import { RedfishHttpsBootInterface } from '../redfish-https-boot.js';

export const HTTP_URL = 'http://192.0.2.10:8080';
export const API_URL = 'http://192.0.2.1:6385';

export interface RedfishHttpsFixture extends HttpRootFixture {
  iface: RedfishHttpsBootInterface;
  /** The lab Redfish BMC (simulated machines) with one system per id asked for. */
  bmc: RedfishBmc;
  /** driver_info of a node on system `id`: the images of the http_root fixture and the BMC's. */
  driverInfoOf(id: string): Record<string, string>;
}

/** A redfish-https interface over a fresh http_root and a simulated Redfish BMC (systems `ids`). */
export async function createRedfishHttpsFixture(
  ids: string[] = ['node-1'],
  options: { bootSources?: ConstructorParameters<typeof SimulatedMachinePower>[0] } = {},
): Promise<RedfishHttpsFixture> {
  const root = await createHttpRootFixture('bmaas-redfish-https-');
  const bmc = await startRedfishBmc({
    systems: ids.map((id) => ({ id, power: new SimulatedMachinePower(options.bootSources) })),
  });
  const settings: RedfishSettings = {
    auth_type: 'auto',
    connection_attempts: 1,
    connection_retry_interval: 0,
    request_timeout: 5,
    max_concurrent_requests: 2,
    bios_apply_timeout: 5,
    kernel_append_params: 'console=ttyS0',
  };
  const logger = createSilentLogger();
  const client = new RedfishClient({ settings, logger });
  const defaults = loadConfig({ env: {} });
  const deps: InterfaceDeps<RedfishSettings> = {
    settings,
    coreSettings: {},
    discovery: defaults.discovery,
    deploy: { ...defaults.deploy, http_root: root.httpRoot, http_url: HTTP_URL },
    apiPublicEndpoint: API_URL,
    inspectionCallbackEndpoint: null,
    fileUrlAllowedPaths: [root.imagesDir],
    powerStateChangeTimeout: 60,
    logger,
    conductorHostname: 'conductor-1',
  };
  const iface = new RedfishHttpsBootInterface(deps, { client, settings, powerStateChangeTimeout: 60 });
  return {
    ...root,
    iface,
    bmc,
    driverInfoOf: (id) => ({
      ...root.driverInfo,
      redfish_address: bmc.url,
      redfish_system_id: `/redfish/v1/Systems/${id}`,
      redfish_username: bmc.username,
      redfish_password: bmc.password,
    }),
    cleanup: async () => {
      await client.close();
      await bmc.close();
      await root.cleanup();
    },
  };
}
