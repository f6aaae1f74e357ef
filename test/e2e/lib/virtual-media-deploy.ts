// One deploy through the redfish-virtual-media boot interface, as the virtual media scenarios
// run it: a node for a lab Redfish machine, manage, provide, deploy with a config drive that
// asks the instance to report, then the facts every such deploy must show (the node's ISO
// inserted once and ejected, nothing of it left under http_root or in the BMC, the ramdisk's
// lookup, the instance's report) and where the time went.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '@bmaas/common';
import type { RedfishMachineBmc, TestRamdisk } from '@bmaas/lab';
import { expect } from 'vitest';
import type { ProductLab } from './product-lab.js';
import type { ServedInstanceImage } from './served-instance-image.js';

const ACTION_TIMEOUT_MS = 120_000;
export const VMEDIA_DEPLOY_TIMEOUT_MS = 360_000;

export interface VirtualMediaDeploy {
  lab: ProductLab;
  bmc: RedfishMachineBmc;
  driverInfo: Record<string, unknown>;
  ramdisk: TestRamdisk;
  served: ServedInstanceImage;
  uuid: string;
  name: string;
  mac: string;
  networkData?: Record<string, unknown>;
}

export interface VirtualMediaOutcome {
  /** The serial console from the deploy's first boot to the ramdisk's power-off. */
  ramdiskSerial: string;
  /** The serial console of the instance's boot from disk. */
  instanceSerial: string;
  /** deploy request -> active, seconds. */
  deploySeconds: number;
  /** One line: the deploy's time and where it went. */
  timeline: string;
}

export async function deployThroughVirtualMedia(run: VirtualMediaDeploy): Promise<VirtualMediaOutcome> {
  const { lab, bmc, uuid } = run;
  const imageBase = new URL(String(run.served.instanceInfo.image_source)).origin;
  await lab.api.expect(201, 'POST', '/v1/nodes', {
    uuid,
    name: run.name,
    driver: 'redfish',
    boot_interface: 'redfish-virtual-media',
    deploy_interface: 'direct',
    ...(run.networkData ? { network_data: run.networkData } : {}),
    driver_info: { ...run.driverInfo, deploy_kernel: run.ramdisk.kernel, deploy_ramdisk: run.ramdisk.initrd },
    instance_info: run.served.instanceInfo,
  });
  await lab.api.expect(201, 'POST', '/v1/ports', { node_uuid: uuid, address: run.mac });
  await lab.api.provisionAndWait(uuid, 'manage', 'manageable', ACTION_TIMEOUT_MS);
  await lab.api.provisionAndWait(uuid, 'provide', 'available', ACTION_TIMEOUT_MS);

  const answered = bmc.redfish.control.requests.length;
  const started = Date.now();
  await lab.api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, {
    target: 'active',
    configdrive: { meta_data: { hostname: run.name, meta: { e2e_report_url: `${imageBase}/report` } } },
  });
  const deployed = await lab.api.waitForProvisionState(uuid, 'active', VMEDIA_DEPLOY_TIMEOUT_MS);
  const deploySeconds = (Date.now() - started) / 1000;
  expect(deployed).toMatchObject({ provision_state: 'active', last_error: null });

  // The BMC was asked to insert the node's ISO once, then to eject it.
  const during = bmc.redfish.control.requests.slice(answered);
  const posts = (action: string) =>
    during.filter((r) => r.method === 'POST' && r.path.endsWith(`VirtualMedia.${action}`));
  expect(posts('InsertMedia')).toHaveLength(1);
  expect(posts('EjectMedia').length).toBeGreaterThanOrEqual(1);
  const ramdiskSerial = await readFile(bmc.serialLog, 'utf8');
  expect(ramdiskSerial).toMatch(new RegExp(`E2E-LOOKUP ok node=${uuid}`));
  // Ejected and deleted: nothing of the node under the conductor's http_root, no copy in the BMC.
  const httpRoot = lab.stack.conductors[0]?.httpRoot as string;
  expect(await readdir(join(httpRoot, uuid)).catch(() => [])).toEqual([]);
  expect(await readdir(join(lab.workDir, `${run.name}.media`)).catch(() => []), "the BMC's copy").toEqual([]);

  // The instance boots its disk and reports over its network.
  const report = await run.served.server.waitForReport(uuid, 240_000);
  expect(report.uuid).toBe(uuid);
  const instanceSerial = await waitFor(
    'the instance to power off after its report',
    async () => {
      const serial = await bmc.serialSincePowerOn();
      return /INSTANCE-POWEROFF/.test(serial) ? (serial.split('INSTANCE-UP from disk')[1] ?? '') : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1000, describe: async () => (await bmc.serialSincePowerOn()).slice(-600) },
  );
  expect(instanceSerial).toMatch(/INSTANCE-REPORTED ok/);

  // Where the time went: the conductor's log (when each phase ended) and the ramdisk's kernel uptime at its markers.
  const lines = lab.stack.allLines().filter((line) => line.nodeUuid === uuid);
  const at = (message: string, after = 0): number | undefined => {
    const found = lines.find((line) => line.message === message && Date.parse(String(line.timestamp)) >= after);
    return found ? Date.parse(String(found.timestamp)) : undefined;
  };
  const accepted = at('provision action accepted', started - 1000) ?? started;
  const inserted = at('virtual media deploy ramdisk inserted', accepted);
  const calledBack = at('agent called back', accepted);
  const written = at('the agent wrote the image asked for', accepted);
  const span = (from: number | undefined, to: number | undefined) =>
    from !== undefined && to !== undefined ? `${((to - from) / 1000).toFixed(1)} s` : '?';
  const built = lines.find((line) => line.message === 'boot ISO built');
  const uptime = (marker: string) => new RegExp(`${marker}[^\\n]*up=([0-9.]+)`).exec(ramdiskSerial)?.[1] ?? '?';
  const network = /E2E-STATIC ok/.test(ramdiskSerial) ? 'E2E-STATIC ok' : 'E2E-DHCP ok';
  const timeline =
    `deploy -> active ${deploySeconds.toFixed(1)} s: ISO ready and inserted ${span(accepted, inserted)} ` +
    `(ISO built in ${built?.ms ?? '?'} ms), power-on to the agent's first heartbeat ${span(inserted, calledBack)} ` +
    `(ramdisk kernel uptime: init ${uptime('E2E-RAMDISK up')} s, network (${network.slice(4, -3).toLowerCase()}) ` +
    `${uptime(network)} s, lookup ${uptime('E2E-LOOKUP ok')} s), image written ${span(calledBack, written)}, ` +
    `then to active (agent power-off, CD ejected, disk boot set, power on) ${span(written, started + deploySeconds * 1000)}`;
  return { ramdiskSerial, instanceSerial, deploySeconds, timeline };
}
