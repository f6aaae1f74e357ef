import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { ensureInstallCredentials, type InstallCredentials, mapLimit, waitFor } from '@bmaas/common';
import { openDatabase, upgradeSchema } from '@bmaas/db';
import {
  type HostsTopology,
  type NetworkHost,
  netnsUnavailableReason,
  POSTGRES_BIN,
  POSTGRES_PORT,
  startHostsTopology,
  subnetOf,
} from '@bmaas/lab';
import { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootNode, BootStorm } from '../faults/boot-fleet.js';
import { ipxeNodeWaitingCallBack } from '../support/instance-image.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { FAST_TIMINGS } from '../support/test-services.js';

/**
 * PostgreSQL primary and synchronous standby under Patroni (etcd on a third host), each on a
 * host of its own; the API and a conductor connect with a multi-host string and
 * target_session_attrs=read-write. The primary's host is cut off under a boot storm and a
 * writer: the standby is promoted, every process reconnects by itself, /v1/boot keeps
 * answering, REST answers 503 and never 500 in the window, and no acknowledged write is lost.
 */
const NODE_COUNT = 8;
const FAILOVER_BOUND_S = 60;
const KEEP = process.env.BMAAS_HOSTS_KEEP === '1';

const problem = await netnsUnavailableReason().then((reason) => {
  if (reason) return reason;
  for (const tool of [join(POSTGRES_BIN, 'postgres'), '/usr/bin/patroni', '/usr/bin/etcd']) {
    if (!existsSync(tool)) return `${tool} is missing (Debian packages postgresql, patroni, etcd-server)`;
  }
  return null;
});

async function httpStatus(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}

describe.skipIf(missingPrerequisite('hosts', problem))('hosts: a PostgreSQL failover under Patroni', () => {
  let topology: HostsTopology;
  let workDir: string;
  const pgHosts: NetworkHost[] = [];
  const services: Services[] = [];
  let databaseUrl: string;
  let apiUrl: string;
  let nodes: BootNode[];
  let credentials: InstallCredentials;
  const restClient = () =>
    new ApiClient(apiUrl, { basicAuth: { username: credentials.apiUser, password: credentials.apiPassword } });

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'bmaas-failover-'));
    await chmod(workDir, 0o777);
    topology = await startHostsTopology({
      apis: 1,
      conductors: 1,
      prefix: 'bmaas-fo',
      subnet: '192.168.81',
      tlsDirectory: join(workDir, 'tls'),
    });
    pgHosts.push(topology.database, await topology.network.addHost('db1', topology.address(11)));
    const etcdHost = await topology.network.addHost('etcd', topology.address(12));
    credentials = ensureInstallCredentials(join(workDir, 'credentials'));
    const etcdUrl = `http://${etcdHost.address}:2379`;
    etcdHost.spawn(
      'etcd',
      [
        '--name=e0',
        `--data-dir=${join(workDir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://${etcdHost.address}:2380`,
        `--initial-advertise-peer-urls=http://${etcdHost.address}:2380`,
        `--initial-cluster=e0=http://${etcdHost.address}:2380`,
      ],
      { stdio: 'ignore' },
    );
    await waitFor('etcd to answer', async () => ((await httpStatus(`${etcdUrl}/health`)) === 200 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 300,
    });
    for (const [i, host] of pgHosts.entries()) {
      const config = join(workDir, `patroni-${i}.yml`);
      await writeFile(
        config,
        [
          'scope: bmaas',
          `name: pg${i}`,
          `restapi: {listen: "${host.address}:8008", connect_address: "${host.address}:8008"}`,
          `etcd3: {hosts: "${etcdHost.address}:2379"}`,
          'bootstrap:',
          '  dcs:',
          '    ttl: 10',
          '    loop_wait: 1',
          '    retry_timeout: 4',
          '    synchronous_mode: true',
          '    postgresql: {use_pg_rewind: false, parameters: {max_connections: 200, fsync: "off", wal_level: replica, hot_standby: "on"}}',
          '  initdb: [{auth: trust}, {username: bmaas}]',
          'postgresql:',
          `  listen: "${host.address}:${POSTGRES_PORT}"`,
          `  connect_address: "${host.address}:${POSTGRES_PORT}"`,
          `  data_dir: ${join(workDir, `pg${i}`)}`,
          `  bin_dir: ${POSTGRES_BIN}`,
          `  pgpass: ${join(workDir, `pgpass${i}`)}`,
          '  authentication:',
          '    superuser: {username: bmaas, password: bmaas}',
          '    replication: {username: bmaas, password: bmaas}',
          // Each its own socket directory, outside the data directory the standby copies.
          `  parameters: {unix_socket_directories: "${join(workDir, `sock${i}`)}"}`,
          '  pg_hba:',
          '    - local all all trust',
          `    - host all all ${subnetOf(host.address)} trust`,
          `    - host replication all ${subnetOf(host.address)} trust`,
          '',
        ].join('\n'),
      );
      await chmod(config, 0o644);
      await mkdir(join(workDir, `sock${i}`), { mode: 0o777 });
      await chmod(join(workDir, `sock${i}`), 0o777);
      // Its log beside its data (kept for a failure's post-mortem while the test runs).
      host.spawn('sh', ['-c', 'exec runuser -u postgres -- patroni "$1" >"$2" 2>&1', 'sh', config, `${config}.log`], {
        stdio: 'ignore',
      });
      // The first one bootstraps the cluster; the second clones it as the standby.
      if (i === 0) {
        await waitFor(
          'the first PostgreSQL to lead',
          async () => ((await httpStatus(`http://${host.address}:8008/primary`)) === 200 ? true : undefined),
          { timeoutMs: 90_000, intervalMs: 500 },
        );
      }
    }
    await waitFor(
      'the standby to replicate synchronously',
      async () => ((await httpStatus(`http://${pgHosts[1]?.address}:8008/sync`)) === 200 ? true : undefined),
      { timeoutMs: 40_000, intervalMs: 500 },
    );
    const hosts = pgHosts.map((h) => `${h.address}:${POSTGRES_PORT}`).join(',');
    databaseUrl = `postgresql://bmaas:bmaas@${hosts}/postgres?target_session_attrs=read-write`;
    const db = openDatabase({ connection: databaseUrl });
    try {
      await upgradeSchema(db);
    } finally {
      await db.destroy();
    }
    const kernel = join(workDir, 'deploy_kernel');
    const ramdisk = join(workDir, 'deploy_ramdisk');
    await writeFile(kernel, 'kernel\n');
    await writeFile(ramdisk, 'ramdisk\n');
    const apiHost = topology.apis[0] as NetworkHost;
    const conductorHost = topology.conductors[0] as NetworkHost;
    apiUrl = `http://${apiHost.address}:6385`;
    const env = {
      BMAAS_DATABASE__MAX_POOL_SIZE: '5',
      BMAAS_DATABASE__STATEMENT_TIMEOUT: '3',
      BMAAS_DATABASE__POOL_TIMEOUT: '3',
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
      ...FAST_TIMINGS,
      // One conductor: a failover must not fence it; the window is the database's, not a takeover's.
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '60',
      BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
      BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
      BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
      BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
      BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
      BMAAS_API__PUBLIC_ENDPOINT: apiUrl,
    };
    const tls = topology.tls;
    if (!tls) throw new Error('the topology made no certificates');
    // Every process: http_basic (credentials.conf) and JSON-RPC over TLS trusting the topology's CA.
    const common = { databaseUrl, env, configFiles: [credentials.configFile], jsonRpcTlsDirectory: tls.directory };
    const onConductor = new Services({
      ...common,
      listenHost: conductorHost.address,
      spawn: conductorHost.spawn.bind(conductorHost),
    });
    services.push(onConductor);
    await onConductor.startConductor({
      rpcPort: 8091,
      certificate: tls.certificateOf(conductorHost),
      files: {
        httpRoot: join(workDir, 'http-root'),
        httpPort: 8080,
        httpUrl: `http://${conductorHost.address}:8080`,
      },
    });
    const onApi = new Services({ ...common, listenHost: apiHost.address, spawn: apiHost.spawn.bind(apiHost) });
    services.push(onApi);
    await onApi.startApi(6385);
    const rest = restClient();
    nodes = await mapLimit(
      Array.from({ length: NODE_COUNT }, (_, i) => i),
      4,
      (i) =>
        ipxeNodeWaitingCallBack(
          rest,
          `fo-${i}`,
          `52:54:00:fb:00:${i.toString(16).padStart(2, '0')}`,
          { kernel, ramdisk },
          60_000,
        ),
    );
  }, 300_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop(2000)));
    await topology?.close();
    if (workDir && !KEEP) await rm(workDir, { recursive: true, force: true });
  });

  it('promotes the standby, reconnects every process, answers 503 never 500, and loses no acknowledged write', async () => {
    const rest = restClient();
    const storm = new BootStorm(apiUrl, nodes, 8, 10_000);
    const acknowledged: string[] = [];
    const statuses: number[] = [];
    let writing = true;
    let n = 0;
    const writer = (async () => {
      while (writing) {
        const name = `written-${n++}`;
        const answer = await rest
          .request('POST', '/v1/nodes', { name, driver: 'fake-hardware' })
          .catch(() => ({ status: 0 }));
        statuses.push(answer.status);
        if (answer.status === 201) acknowledged.push(name);
        else await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, 2000));
    const primary = pgHosts[0] as NetworkHost;
    const ackedBefore = acknowledged.length;
    const cutAt = Date.now();
    await primary.cut();
    // A write acknowledged after the cut means the processes found the new primary.
    await waitFor(
      'a write acknowledged by the new primary',
      async () =>
        (await httpStatus(`http://${pgHosts[1]?.address}:8008/primary`)) === 200 &&
        acknowledged.length > ackedBefore + 3
          ? true
          : undefined,
      { timeoutMs: FAILOVER_BOUND_S * 1000, intervalMs: 200 },
    );
    const windowS = (Date.now() - cutAt) / 1000;
    await new Promise((r) => setTimeout(r, 2000));
    writing = false;
    await writer;
    const samples = await storm.stop();

    // REST: 503 in the window, never a 500.
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    // No acknowledged write lost: every node the API said it created is there, on the new primary.
    const names = new Set<string>();
    const db = openDatabase({ connection: databaseUrl });
    try {
      for (const row of (await db('nodes').select('name')) as Array<{ name: string | null }>)
        if (row.name) names.add(row.name);
    } finally {
      await db.destroy();
    }
    const lost = acknowledged.filter((name) => !names.has(name));
    expect(lost).toEqual([]);
    // /v1/boot: every request answered, never a 500.
    expect(samples.filter((s) => s.status === 0 || (s.status >= 500 && s.status !== 503)).length).toBe(0);
    const served = samples.filter((s) => s.status === 200).length;
    console.info(
      `[hosts] PostgreSQL primary's host cut off under a boot storm and a writer: standby promoted and ` +
        `every process writing again ${windowS.toFixed(1)} s after the cut (Patroni ttl 10 s, loop_wait 1 s); ` +
        `${acknowledged.length} writes acknowledged, 0 lost; REST ${statuses.filter((s) => s === 503).length} × 503, 0 × 500; ` +
        `/v1/boot ${samples.length} requests, ${served} served, ${samples.filter((s) => s.status === 503).length} × 503, 0 unanswered`,
    );
  }, 240_000);
});
