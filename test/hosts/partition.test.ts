import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { ensureInstallCredentials, type InstallCredentials, loadConfig, mapLimit, waitFor } from '@bmaas/common';
import { openDatabase, upgradeSchema } from '@bmaas/db';
import {
  type HostPostgres,
  type HostsTopology,
  netnsUnavailableReason,
  POSTGRES_BIN,
  startHostsTopology,
  startPostgresOnHost,
} from '@bmaas/lab';
import { type ConductorProcess, Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BootNode, BootStorm, isScriptOf } from '../faults/boot-fleet.js';
import { ipxeNodeWaitingCallBack } from '../support/instance-image.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { FAST_TIMINGS } from '../support/test-services.js';
import { curlFrom } from './curl.js';

/**
 * A conductor host's cable pulled while it owns nodes mid-deploy (waiting for their
 * machines' call-back) and a boot storm runs on both APIs: the others take its nodes over
 * after heartbeat_timeout and serve their boot configurations; the cut-off conductor fences
 * itself; plugged back in, it rejoins. No node is ever driven by two conductors, none is
 * stranded, every node's history is in order.
 */
const HEARTBEAT_TIMEOUT_S = 4;
const NODE_COUNT = 24;
/** Bound on the takeover on a busy two-core machine (the figure is printed). */
const TAKEOVER_BOUND_S = 30;
/** A JSON-RPC call every conductor answers: fake-hardware has no driver properties ({}). */
const DRIVER_PROPERTIES = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'get_driver_properties',
  params: { driver_name: 'fake-hardware' },
});

const problem = await netnsUnavailableReason().then(
  (reason) =>
    reason ??
    (existsSync(join(POSTGRES_BIN, 'postgres'))
      ? null
      : `${POSTGRES_BIN}/postgres is missing (Debian package postgresql)`),
);

describe.skipIf(missingPrerequisite('hosts', problem))('hosts: a partitioned conductor', () => {
  let topology: HostsTopology;
  let postgres: HostPostgres;
  let workDir: string;
  const services: Services[] = [];
  const conductors: ConductorProcess[] = [];
  const apiUrls: string[] = [];
  let databaseUrl: string;
  let nodes: BootNode[];
  let credentials: InstallCredentials;

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'bmaas-hosts-'));
    topology = await startHostsTopology({ subnet: '192.168.80', tlsDirectory: join(workDir, 'tls') });
    // The install's credentials, as npm start makes them: http_basic for REST and JSON-RPC.
    credentials = ensureInstallCredentials(join(workDir, 'credentials'));
    postgres = await startPostgresOnHost(topology.database);
    databaseUrl = postgres.url;
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
    for (const host of topology.apis) apiUrls.push(`http://${host.address}:6385`);
    const env = {
      BMAAS_DATABASE__MAX_POOL_SIZE: '5',
      BMAAS_DATABASE__STATEMENT_TIMEOUT: '3',
      BMAAS_DATABASE__POOL_TIMEOUT: '3',
      BMAAS_DEFAULT__LOG_FORMAT: 'json',
      ...FAST_TIMINGS,
      BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL: '1',
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT_S),
      BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
      BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
      BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
      BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
      BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
      BMAAS_API__PUBLIC_ENDPOINT: apiUrls[0] as string,
    };
    const tls = topology.tls;
    if (!tls) throw new Error('the topology made no certificates');
    // Every process: http_basic (credentials.conf) and JSON-RPC over TLS trusting the topology's CA.
    const common = { databaseUrl, env, configFiles: [credentials.configFile], jsonRpcTlsDirectory: tls.directory };
    await Promise.all(
      topology.conductors.map(async (host, i) => {
        const on = new Services({ ...common, listenHost: host.address, spawn: host.spawn.bind(host) });
        services.push(on);
        conductors[i] = await on.startConductor({
          rpcPort: 8091,
          certificate: tls.certificateOf(host),
          files: { httpRoot: join(workDir, `http-root-${i}`), httpPort: 8080, httpUrl: `http://${host.address}:8080` },
        });
      }),
    );
    for (const host of topology.apis) {
      const on = new Services({ ...common, listenHost: host.address, spawn: host.spawn.bind(host) });
      services.push(on);
      await on.startApi(6385);
    }
    const rest = restClient(apiUrls[0] as string);
    nodes = await mapLimit(
      Array.from({ length: NODE_COUNT }, (_, i) => i),
      6,
      (i) =>
        ipxeNodeWaitingCallBack(
          rest,
          `host-${i}`,
          `52:54:00:ab:00:${i.toString(16).padStart(2, '0')}`,
          { kernel, ramdisk },
          60_000,
        ),
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop(2000)));
    await postgres?.stop();
    await topology?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const restClient = (url: string) =>
    new ApiClient(url, { basicAuth: { username: credentials.apiUser, password: credentials.apiPassword } });

  it('speaks JSON-RPC between hosts over TLS with http_basic, and nothing else', async () => {
    const [api1] = topology.apis.slice(1);
    const [cond0, cond1] = topology.conductors;
    const tls = topology.tls;
    if (!api1 || !cond0 || !cond1 || !tls) throw new Error('topology incomplete');
    const { json_rpc: rpc } = loadConfig({ configFiles: [credentials.configFile], env: {} });
    const call = ['-H', 'content-type: application/json', '--data', DRIVER_PROPERTIES];
    const https = `https://${cond0.address}:8091/`;
    // From the second API's host: the conductor's own port, as the API's JSON-RPC client reaches it.
    const good = await curlFrom(api1, workDir, [...call, '--cacert', tls.caFile, https], rpc);
    expect(good).toMatchObject({ code: 0, status: 200 });
    expect(JSON.parse(good.body)).toMatchObject({ result: {} });
    // Plain HTTP: no answer at all, the connection closed.
    const plain = await curlFrom(api1, workDir, [...call, `http://${cond0.address}:8091/`], rpc);
    expect(plain).toMatchObject({ status: 0 });
    expect([52, 56]).toContain(plain.code); // empty reply / connection reset
    await (conductors[0] as ConductorProcess).process.waitForLine(
      (line) => String(line.message).startsWith('JSON-RPC connection refused: a client spoke plain HTTP'),
      5000,
    );
    // A client that does not trust the CA: fails closed (curl 60: certificate problem), sends nothing.
    const untrusted = await curlFrom(api1, workDir, [...call, https], rpc);
    expect(untrusted).toMatchObject({ code: 60, status: 0 });
    expect(untrusted.stderr).toMatch(/certificate/i);
    // Each certificate names its own host: cond1's, reached as cond0's address, is refused.
    const wrongHost = await curlFrom(
      api1,
      workDir,
      [...call, '--cacert', tls.caFile, '--connect-to', `${cond0.address}:8091:${cond1.address}:8091`, https],
      rpc,
    );
    expect(wrongHost).toMatchObject({ code: 60, status: 0 });
    expect(wrongHost.stderr).toMatch(/subject|name/i);
    // TLS alone is not enough: without the JSON-RPC password, 401.
    expect(await curlFrom(api1, workDir, [...call, '--cacert', tls.caFile, https])).toMatchObject({ status: 401 });
    // And the APIs' calls over it work: a REST route the conductors answer, on either API.
    for (const url of apiUrls)
      expect(await restClient(url).request('GET', '/v1/drivers/fake-hardware/properties')).toMatchObject({
        status: 200,
        body: {},
      });
  });

  it('fences the cut-off conductor, hands its nodes over, and takes it back without a node driven twice', async () => {
    const rest = restClient(apiUrls[1] as string);
    const victim = conductors[0] as ConductorProcess;
    const victimHost = topology.conductors[0];
    if (!victimHost) throw new Error('no conductor host');
    const ownerBefore = new Map<string, string>();
    for (const node of nodes) ownerBefore.set(node.uuid, (await rest.node(node.uuid)).conductor as string);
    const orphaned = nodes.filter((n) => ownerBefore.get(n.uuid) === victim.hostname);
    expect(orphaned.length).toBeGreaterThan(0);

    const storms = apiUrls.map((url) => new BootStorm(url, nodes, 8, 10_000));
    await new Promise((r) => setTimeout(r, 1500));
    const cutAt = Date.now();
    await victimHost.cut();

    // The cut-off conductor notices by itself: fenced within heartbeat_timeout (+ one heartbeat).
    const fencedLine = await victim.process.waitForLine(
      (l) => String(l.message).startsWith('registration not renewed within heartbeat_timeout'),
      (HEARTBEAT_TIMEOUT_S + 10) * 1000,
    );
    const fencedAt = Date.parse(String(fencedLine.timestamp));

    // The others serve every orphan (a script not naming the victim's file server).
    const victimFiles = `http://${victimHost.address}:8080`;
    const servedAt = new Map<string, number>();
    await waitFor(
      "every one of the cut-off conductor's nodes to be served by a new owner",
      async () => {
        for (const storm of storms) {
          for (const s of storm.samples) {
            const at = storm.startedAt + s.sentAt;
            if (at > cutAt && s.status === 200 && !s.body.includes(victimFiles) && !servedAt.has(s.node.uuid)) {
              servedAt.set(s.node.uuid, storm.startedAt + s.answeredAt - cutAt);
            }
          }
        }
        return orphaned.every((n) => servedAt.has(n.uuid)) ? true : undefined;
      },
      {
        timeoutMs: TAKEOVER_BOUND_S * 1000,
        intervalMs: 250,
        describe: () => `${orphaned.filter((n) => !servedAt.has(n.uuid)).length} of ${orphaned.length} unserved`,
      },
    );
    const takeoverS = Math.max(...servedAt.values()) / 1000;

    // Plugged back in: it renews, cleans up and rejoins.
    const restoredAt = Date.now();
    await victimHost.restore();
    const rejoinLine = await victim.process.waitForLine(
      (l) => String(l.message).startsWith('registration renewed after a lapse'),
      60_000,
    );
    const rejoinedAt = Date.parse(String(rejoinLine.timestamp));
    // Ring settled again: every node served, by whichever owner, with its own script.
    await waitFor(
      'every node owned by an alive conductor and unlocked',
      async () => {
        for (const node of nodes) {
          const now = await rest.node(node.uuid);
          if (now.reservation || now.provision_state !== 'wait call-back') return undefined;
        }
        return true;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await new Promise((r) => setTimeout(r, 2000));
    const samples = (await Promise.all(storms.map((s) => s.stop()))).flat();

    // Never a wrong script; refusals only while the ring changed hands, never a 5xx.
    const served = samples.filter((s) => s.status === 200);
    expect(served.length).toBeGreaterThan(nodes.length);
    for (const s of served) expect(isScriptOf(s.body, s.node), s.node.uuid).toBe(true);
    expect(samples.filter((s) => s.status >= 500).map((s) => s.status)).toEqual([]);

    // From the database: nothing written by the victim between its fence and its rejoin
    // (0 double-driven), every history in order, no node stranded.
    const db = openDatabase({ connection: databaseUrl });
    try {
      const history = (await db('node_history')
        .select('id', 'node_id', 'conductor', 'created_at')
        .orderBy('id')) as Array<{
        id: number;
        node_id: number;
        conductor: string | null;
        created_at: Date;
      }>;
      const byVictimWhileFenced = history.filter(
        (h) =>
          h.conductor === victim.hostname && h.created_at.getTime() > fencedAt && h.created_at.getTime() < rejoinedAt,
      );
      expect(byVictimWhileFenced).toEqual([]);
      const last = new Map<number, number>();
      for (const h of history) {
        expect(h.created_at.getTime(), `history of node ${h.node_id}`).toBeGreaterThanOrEqual(last.get(h.node_id) ?? 0);
        last.set(h.node_id, h.created_at.getTime());
      }
      const stranded = await db('nodes')
        .whereNotNull('reservation')
        .orWhereNot('provision_state', 'wait call-back')
        .count('* as n');
      expect(Number(stranded[0]?.n)).toBe(0);
      const alive = await db('conductors')
        .where({ online: true })
        .whereRaw(`updated_at > now() - interval '${HEARTBEAT_TIMEOUT_S} seconds'`)
        .count('* as n');
      expect(Number(alive[0]?.n)).toBe(3);
    } finally {
      await db.destroy();
    }
    // The victim took nothing over while cut off.
    const tookOver = victim.process.lines.filter(
      (l) =>
        l.message === 'took the node over' &&
        Date.parse(String(l.timestamp)) < rejoinedAt &&
        Date.parse(String(l.timestamp)) > cutAt,
    );
    expect(tookOver).toEqual([]);

    console.info(
      `[hosts] cable of ${victim.hostname} (${orphaned.length} of ${nodes.length} nodes in wait call-back) pulled during a boot storm on 2 APIs: ` +
        `fenced itself ${((fencedAt - cutAt) / 1000).toFixed(1)} s after the cut (heartbeat_timeout ${HEARTBEAT_TIMEOUT_S} s); ` +
        `every node served by a new owner ${takeoverS.toFixed(1)} s after the cut; ` +
        `rejoined ${((rejoinedAt - restoredAt) / 1000).toFixed(1)} s after the cable came back; ` +
        `${samples.length} boot requests, ${served.length} served, ${samples.filter((s) => s.status === 404).length} refused (404), ` +
        `${samples.filter((s) => s.status === 0).length} unanswered, 0 wrong, 0 5xx; 0 nodes double-driven, 0 stranded`,
    );
  }, 240_000);
});
