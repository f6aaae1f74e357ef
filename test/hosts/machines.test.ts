import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { ensureInstallCredentials, type InstallCredentials, waitFor } from '@bmaas/common';
import { openDatabase, upgradeSchema } from '@bmaas/db';
import {
  buildInstanceImage,
  buildTestRamdisk,
  type Dnsmasq,
  type HostPostgres,
  type HostRelay,
  type HostsTopology,
  IMAGE_CACHE_DIR,
  type ImageServer,
  type MachineBmc,
  netnsUnavailableReason,
  POSTGRES_BIN,
  RAMDISK_KERNEL_ARGS,
  startDnsmasq,
  startHostRelay,
  startHostsTopology,
  startImageServer,
  startMachineBmc,
  startPostgresOnHost,
  type TestRamdisk,
} from '@bmaas/lab';
import { type ConductorProcess, Services } from '@bmaas/stack';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LAB_TIMINGS } from '../e2e/lib/lab-services.js';
import { missingLabTools } from '../e2e/lib/prerequisites.js';
import { ipmiNodeBodyFor } from '../e2e/lib/product-lab.js';
import { finishWorkDir } from '../e2e/lib/work-dir.js';
import { missingPrerequisite } from '../support/prerequisites.js';

/**
 * QEMU machines on the hosts topology: one static DHCP configuration (dnsmasq on a host of its
 * own) names one API address; the other API serves the same boot configurations; a machine
 * behind its IPMI BMC is deployed to disk by the conductor that owns its node, on another
 * host, and boots from its disk. JSON-RPC between the hosts is TLS with http_basic.
 */
const LABEL = 'hosts-machines';
const SUBNET = '192.168.82';
/** The DHCP host's IPv6 prefix, which its router advertisements announce. */
const IPV6_PREFIX = 'fd82::';
const API_PORT = 6385;
const RPC_PORT = 8091;
const FILES_PORT = 8080;
const IMAGES_PORT = 8099;
const BMC_PORT = 6230;
const MAC = '52:54:00:82:00:01';
const DISK_BYTES = 128 * 1024 * 1024;
/** Ramdisk boot, image written, power off, disk boot, on two busy emulating cores. */
const DEPLOY_TIMEOUT_MS = 360_000;
const DISK_BOOT_TIMEOUT_MS = 120_000;

const missingTools = [
  ...(await missingLabTools()),
  ...['ipmi_sim', 'ipmitool', 'curl'].filter((tool) => !onPath(tool)),
  ...(existsSync(join(POSTGRES_BIN, 'postgres')) ? [] : [`${POSTGRES_BIN}/postgres`]),
];
const problem =
  missingTools.length > 0
    ? `missing ${missingTools.join(', ')} (see test/debian-packages.txt)`
    : await netnsUnavailableReason();

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, command)));
}

describe.skipIf(missingPrerequisite(LABEL, problem))(
  'hosts: QEMU machines through one static DHCP configuration',
  () => {
    let topology: HostsTopology;
    let postgres: HostPostgres;
    let workDir: string;
    let credentials: InstallCredentials;
    let ramdisk: TestRamdisk;
    let dnsmasq: Dnsmasq;
    let images: ImageServer;
    let imagesRelay: HostRelay;
    let bmc: MachineBmc;
    let imageSha256: string;
    const services: Services[] = [];
    const conductors: ConductorProcess[] = [];
    const apiUrls: string[] = [];
    let databaseUrl: string;
    const startedAt = Date.now();
    let setUpS = 0;
    /** Until the set-up is done; then whether a test failed (the logs are kept). */
    let failed = true;

    beforeAll(async () => {
      ramdisk = await buildTestRamdisk(IMAGE_CACHE_DIR);
      const image = await buildInstanceImage(IMAGE_CACHE_DIR);
      imageSha256 = image.sha256;
      workDir = await mkdtemp(join(tmpdir(), 'bmaas-hm-'));
      topology = await startHostsTopology({ subnet: SUBNET, prefix: 'bmaas-hm', tlsDirectory: join(workDir, 'tls') });
      const tls = topology.tls;
      if (!tls) throw new Error('the topology made no certificates');
      postgres = await startPostgresOnHost(topology.database);
      databaseUrl = postgres.url;
      const db = openDatabase({ connection: databaseUrl });
      try {
        await upgradeSchema(db);
      } finally {
        await db.destroy();
      }
      credentials = ensureInstallCredentials(join(workDir, 'credentials'));
      for (const host of topology.apis) apiUrls.push(`http://${host.address}:${API_PORT}`);
      const publicApi = apiUrls[0] as string;
      const env = {
        ...LAB_TIMINGS,
        BMAAS_DATABASE__MAX_POOL_SIZE: '5',
        BMAAS_DEFAULT__LOG_FORMAT: 'json',
        BMAAS_DEFAULT__LOG_LEVEL: 'debug',
        BMAAS_API__PUBLIC_ENDPOINT: publicApi,
        BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'fake-hardware,ipmi',
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
        BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
        BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'fake,ipmitool',
        BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,ipmitool',
        BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
        BMAAS_PXE__KERNEL_APPEND_PARAMS: RAMDISK_KERNEL_ARGS,
        BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: dirname(ramdisk.kernel),
        BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
        BMAAS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT: '300',
        BMAAS_API__RAMDISK_HEARTBEAT_TIMEOUT: '30',
        // The test agent serves its command API over plain HTTP (busybox has no TLS).
        BMAAS_AGENT__REQUIRE_TLS: 'false',
      };
      // Every process: http_basic (credentials.conf) and JSON-RPC over TLS trusting the topology's CA.
      const common = { databaseUrl, env, configFiles: [credentials.configFile], jsonRpcTlsDirectory: tls.directory };
      await Promise.all(
        topology.conductors.map(async (host, i) => {
          const on = new Services({
            ...common,
            listenHost: host.address,
            spawn: host.spawn.bind(host),
            logDir: join(workDir, 'logs', host.name),
            startTimeoutMs: 60_000,
          });
          services.push(on);
          conductors[i] = await on.startConductor({
            rpcPort: RPC_PORT,
            certificate: tls.certificateOf(host),
            files: {
              httpRoot: join(workDir, `http-${i}`),
              httpPort: FILES_PORT,
              httpUrl: `http://${host.address}:${FILES_PORT}`,
            },
          });
        }),
      );
      for (const host of topology.apis) {
        const on = new Services({
          ...common,
          listenHost: host.address,
          spawn: host.spawn.bind(host),
          logDir: join(workDir, 'logs', host.name),
          startTimeoutMs: 60_000,
        });
        services.push(on);
        await on.startApi(API_PORT);
      }

      // DHCP on a host of its own; the one static answer names the first API only. iPXE expands
      // ${mac:hexhyp} in the boot file name itself.
      const dhcpHost = await topology.network.addHost('dhcp', topology.address(5));
      await dhcpHost.exec('ip', ['-6', 'addr', 'add', `${IPV6_PREFIX}5/64`, 'dev', 'eth0', 'nodad']);
      dnsmasq = await startDnsmasq({
        network: topology.network,
        bootUrl: `${publicApi}/v1/boot/\${mac:hexhyp}/boot.ipxe`,
        workDir,
        host: { host: dhcpHost, range: [topology.address(100), topology.address(199)], ipv6Prefix: IPV6_PREFIX },
      });

      // The instance image, served from the test's own address on the bridge (an image server).
      images = await startImageServer(join(workDir, 'images.sock'), image.path);
      imagesRelay = await startHostRelay(
        `tcp:${topology.rootAddress}:${IMAGES_PORT}`,
        `unix:${join(workDir, 'images.sock')}`,
      );

      // The machine: QEMU on the bridge behind ipmi_sim, which listens on the test's address.
      const disk = join(workDir, 'm0.disk');
      await writeFile(disk, '');
      await truncate(disk, DISK_BYTES);
      bmc = await startMachineBmc({
        name: 'm0',
        mac: MAC,
        net: { kind: 'tap', network: topology.network, tap: await topology.network.addTap() },
        address: topology.rootAddress,
        port: BMC_PORT,
        workDir,
        disk,
        bmcOnHost: true,
      });
      setUpS = (Date.now() - startedAt) / 1000;
      failed = false;
    }, 300_000);

    afterAll(async () => {
      await bmc?.stop();
      await dnsmasq?.stop();
      await imagesRelay?.stop();
      await images?.close();
      await Promise.all(services.map((s) => s.stop(5000)));
      await postgres?.stop();
      await topology?.close();
      await finishWorkDir(workDir, failed, LABEL);
    }, 120_000);

    afterEach((context) => {
      if (context.task.result?.state === 'fail') failed = true;
    });

    const rest = (url: string) =>
      new ApiClient(url, { basicAuth: { username: credentials.apiUser, password: credentials.apiPassword } });

    it(
      'deploys a machine to disk through the namespaced hosts; both APIs serve the same boot configuration',
      async () => {
        const api0 = rest(apiUrls[0] as string);
        const uuid = randomUUID();
        await api0.expect(201, 'POST', '/v1/nodes', {
          ...ipmiNodeBodyFor(bmc, ramdisk, { uuid, name: 'm0' }),
          automated_clean: false,
          instance_info: {
            image_source: `http://${topology.rootAddress}:${IMAGES_PORT}${images.imagePath}`,
            image_os_hash_algo: 'sha256',
            image_os_hash_value: imageSha256,
            image_disk_format: 'raw',
          },
        });
        await api0.expect(201, 'POST', '/v1/ports', { address: MAC, node_uuid: uuid });
        // Its owner: the conductor the ring gives it, on a host of its own (not an API's, not DHCP's).
        const ownerName = String((await api0.node(uuid)).conductor);
        const ownerIndex = conductors.findIndex((c) => c.hostname === ownerName);
        const owner = conductors[ownerIndex];
        const ownerHost = topology.conductors[ownerIndex];
        if (!owner || !ownerHost) throw new Error(`node ${uuid} is owned by ${ownerName}, not a conductor host`);
        await api0.provisionAndWait(uuid, 'manage', 'manageable', 90_000);
        await api0.provisionAndWait(uuid, 'provide', 'available', 90_000);
        expect(bmc.machineRunning(), 'nothing powered it on yet').toBe(false);

        const deployAt = Date.now();
        await api0.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active' });

        // While the node waits for its ramdisk: the API the DHCP answer names and the other one
        // serve the same script, which names the owner's file server on its host.
        const hyphenated = MAC.replaceAll(':', '-');
        const scripts = await waitFor(
          'both APIs to serve the boot configuration',
          async () => {
            const answers = await Promise.all(
              apiUrls.map(async (url) => {
                const response = await fetch(`${url}/v1/boot/${hyphenated}/boot.ipxe`);
                return { status: response.status, body: await response.text() };
              }),
            );
            return answers.every((a) => a.status === 200) ? answers.map((a) => a.body) : undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        expect(scripts[1]).toBe(scripts[0]);
        expect(scripts[0]).toContain(`http://${ownerHost.address}:${FILES_PORT}/`);
        expect(scripts[0]).toContain(`ipa-api-url=${apiUrls[0]}`);

        const active = await api0.waitForProvisionState(uuid, 'active', DEPLOY_TIMEOUT_MS);
        const deployS = (Date.now() - deployAt) / 1000;
        expect(active).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
        expect(active.conductor).toBe(owner.hostname);

        // Booted its disk (bootdev disk after the deploy), not the network.
        await bmc.waitForSerialSincePowerOn(/bootdev=default[\s\S]*INSTANCE-UP from disk/, DISK_BOOT_TIMEOUT_MS);
        const instanceUpS = (Date.now() - deployAt) / 1000;

        // The way there: DHCP from the DHCP host naming the first API; iPXE chained the node's
        // script from that API; the ramdisk came from the owner's file server; the agent fetched
        // the image from the image server; the owner drove it all.
        const lease = await dnsmasq.waitForDhcpAck(MAC, 1000);
        expect(lease.startsWith(`${SUBNET}.1`)).toBe(true);
        expect(await dnsmasq.readLog()).toContain(`${apiUrls[0]}/v1/boot/\${mac:hexhyp}/boot.ipxe`);
        const serial = await readFile(bmc.serialLog, 'utf8');
        expect(serial).toContain(`${apiUrls[0]}/v1/boot/${hyphenated}/boot.ipxe... ok`);
        expect(serial).toMatch(new RegExp(`E2E-LOOKUP ok node=${uuid}`));
        expect(images.requests.filter((r) => r.url === images.imagePath && r.status === 200).length).toBeGreaterThan(0);
        const ownerLines = owner.process.lines;
        expect(ownerLines.some((l) => l.nodeUuid === uuid && /deploy/i.test(String(l.message)))).toBe(true);
        const others = conductors.filter((c) => c !== owner);
        for (const other of others) {
          expect(
            other.process.lines.filter((l) => l.nodeUuid === uuid && l.level !== 'debug'),
            other.hostname,
          ).toEqual([]);
        }
        const chassis = await readFile(join(workDir, 'm0-bmc', 'chassis.log'), 'utf8');
        expect(chassis).toMatch(/set boot pxe[\s\S]*set power 1[\s\S]*set boot default[\s\S]*set power 1/);

        console.info(
          `[hosts] machines: set-up ${setUpS.toFixed(0)} s (topology, PostgreSQL, 3 conductors, 2 APIs, dnsmasq, BMC); ` +
            `deploy of m0 by ${owner.hostname} (DHCP naming ${apiUrls[0]} only, both APIs serving the same script) ` +
            `active after ${deployS.toFixed(0)} s, its disk's OS up after ${instanceUpS.toFixed(0)} s; lease ${lease}`,
        );
      },
      DEPLOY_TIMEOUT_MS + DISK_BOOT_TIMEOUT_MS + 60_000,
    );
  },
);
