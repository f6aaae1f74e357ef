import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, ironicFault } from '@bmaas/api-client';
import { freePort, mapLimit, waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { ConductorProcess, LogLine, Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipxeNodeWaitingCallBack } from '../support/instance-image.js';
import { comparable, type RawAnswer, rawGet } from '../support/raw-http.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The boot configuration API with three real conductors, each rendering
 * into its own http_root and serving it at its own http_url, as on three
 * hosts: every node's script comes through `GET /v1/boot/<MAC>/boot.ipxe`
 * from whichever conductor owns the node, also after that owner dies.
 * Tests run in order on one stack; the last one kills a conductor.
 */

const NODE_COUNT = 30;
const HEARTBEAT_TIMEOUT = 3;
/** Lock retries of an exclusive lock: a boot request that took one would wait at least 2 × this. */
const LOCK_RETRY_INTERVAL_S = 1.5;
const KERNEL = 'test deploy kernel\n';
const RAMDISK = 'test deploy ramdisk\n';

interface BootNode {
  uuid: string;
  /** As firmware sends it with ${mac:hexhyp}, and as pxelinux.cfg names it. */
  macHyphens: string;
}

let database: TestDatabase;
let stack: Services;
let rest: ApiClient;
let apiUrl: string;
let workDir: string;
/** http_url of each conductor, by registered hostname. */
const httpUrlOf = new Map<string, string>();
let nodes: BootNode[] = [];
/** The answer every refusal must equal: an unknown MAC. */
let reference: RawAnswer;

function conductorNamed(hostname: string | null): ConductorProcess {
  const found = stack.conductors.find((c) => c.hostname === hostname);
  if (!found) throw new Error(`no conductor ${hostname}`);
  return found;
}

function bootPath(node: BootNode, name = 'boot.ipxe'): string {
  return `/v1/boot/${node.macHyphens}/${name}`;
}

/** What a script rendered by `owner` for `uuid` must contain. */
function expectScriptOf(script: string, uuid: string, ownerHttpUrl: string): void {
  expect(script).toMatch(/^#!ipxe\n/);
  expect(script).toContain(`# Boot script of node ${uuid},`);
  expect(script).toContain(`kernel ${ownerHttpUrl}/${uuid}/deploy_kernel `);
  expect(script).toContain(`initrd ${ownerHttpUrl}/${uuid}/deploy_ramdisk`);
  expect(script).toContain(`ipa-api-url=${apiUrl} `);
}

/** Log lines of any process carrying this request id. */
function linesWithRequestId(requestId: string): Array<{ process: string; line: LogLine }> {
  return stack
    .processes()
    .flatMap((p) => p.lines.filter((line) => line.requestId === requestId).map((line) => ({ process: p.name, line })));
}

beforeAll(async () => {
  database = await createTestDatabase();
  workDir = await mkdtemp(join(tmpdir(), 'bmaas-boot-config-'));
  const kernel = join(workDir, 'deploy_kernel');
  const ramdisk = join(workDir, 'deploy_ramdisk');
  await writeFile(kernel, KERNEL);
  await writeFile(ramdisk, RAMDISK);
  const roots = await Promise.all([0, 1, 2].map((i) => mkdtemp(join(workDir, `http-root-${i}-`))));
  const httpUrls = await Promise.all([0, 1, 2].map(async () => `http://127.0.0.1:${await freePort()}`));
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;

  stack = await startTestServices({
    databaseUrl: database.url,
    conductors: 3,
    api: true,
    apiPort,
    startTimeoutMs: 60_000,
    env: {
      BMAAS_DEFAULT__LOG_LEVEL: 'debug',
      BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
      BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
      BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
      BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT),
      BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_ATTEMPTS: '3',
      BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_INTERVAL: String(LOCK_RETRY_INTERVAL_S),
      BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
      BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: '127.0.0.1',
      BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
      BMAAS_API__PUBLIC_ENDPOINT: apiUrl,
      BMAAS_API__RESTRICT_BOOT_CONFIG: 'true',
    },
    conductorEnv: (i) => ({
      BMAAS_DEPLOY__HTTP_ROOT: roots[i] as string,
      BMAAS_DEPLOY__HTTP_URL: httpUrls[i] as string,
    }),
  });
  for (const conductor of stack.conductors) {
    const started = await conductor.process.waitForLine((l) => l.message === 'conductor started', 1000);
    // Which conductor got which root: its file server listens on the port of its http_url.
    const url = httpUrls.find((u) => u.endsWith(`:${String(started.httpRoot).split(':').at(-1)}`));
    httpUrlOf.set(conductor.hostname, url as string);
  }
  expect(new Set(httpUrlOf.values()).size).toBe(3);
  rest = new ApiClient(apiUrl);
  reference = await rawGet(apiUrl, '/v1/boot/02-00-00-00-00-01/boot.ipxe');
});

afterAll(async () => {
  await stack?.stop();
  await database?.drop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('boot configuration API, three conductors with separate HTTP roots', () => {
  it('deploys 30 nodes created through REST into "wait call-back"', async () => {
    const kernel = join(workDir, 'deploy_kernel');
    const ramdisk = join(workDir, 'deploy_ramdisk');
    nodes = await mapLimit(
      Array.from({ length: NODE_COUNT }, (_, i) => i),
      10,
      async (i) => {
        const mac = `52:54:00:bc:00:${i.toString(16).padStart(2, '0')}`;
        return ipxeNodeWaitingCallBack(rest, `boot-${i}`, mac, { kernel, ramdisk });
      },
    );
    const owners = await Promise.all(nodes.map(async (n) => (await rest.node(n.uuid)).conductor));
    const perOwner = new Map<string, number>();
    for (const owner of owners) perOwner.set(owner as string, (perOwner.get(owner as string) ?? 0) + 1);
    // Every conductor owns some: the takeover test needs a victim with nodes.
    expect([...perOwner.keys()].sort()).toEqual([...httpUrlOf.keys()].sort());
    console.info(`nodes per conductor: ${[...perOwner.values()].join(', ')}`);
  });

  it("serves each node's script from its owner, naming its uuid and the owner's http_url; the owner's HTTP server has the same file", async () => {
    await mapLimit(nodes, 6, async (node) => {
      const { conductor } = await rest.node(node.uuid);
      const ownerUrl = httpUrlOf.get(conductor as string) as string;
      const answer = await rawGet(apiUrl, bootPath(node));
      expect(answer.status, answer.body).toBe(200);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.headers['cache-control']).toBe('no-store');
      expectScriptOf(answer.body, node.uuid, ownerUrl);

      const linked = await rawGet(ownerUrl, `/pxelinux.cfg/${node.macHyphens}`);
      expect(linked.status).toBe(200);
      expect(linked.body).toBe(answer.body);
      // The images the script names are there too.
      expect((await rawGet(ownerUrl, `/${node.uuid}/deploy_kernel`)).body).toBe(KERNEL);
      for (const [host, url] of httpUrlOf) {
        if (host !== conductor) expect((await rawGet(url, `/pxelinux.cfg/${node.macHyphens}`)).status).toBe(404);
      }
    });
    // The root script every machine gets from DHCP chains the API, from any conductor's server.
    for (const url of httpUrlOf.values()) {
      const root = await rawGet(url, '/boot.ipxe');
      expect(root.status).toBe(200);
      expect(root.body).toContain(`chain ${apiUrl}/v1/boot/\${net\${nic}/mac:hexhyp}/boot.ipxe`);
    }
  });

  it('serves the script at once while another task holds the exclusive lock (shared lock, no reservation)', async () => {
    const node = nodes[0] as BootNode;
    const { conductor } = await rest.node(node.uuid);
    const before = (await rawGet(apiUrl, bootPath(node))).body;
    // The owner itself holds the lock, as when one of its tasks works on the node.
    await database.db('nodes').where({ uuid: node.uuid }).update({ reservation: conductor });
    try {
      const started = performance.now();
      const answer = await rawGet(apiUrl, bootPath(node));
      const elapsedMs = performance.now() - started;
      expect(answer.status).toBe(200);
      expect(answer.body).toBe(before);
      // An exclusive lock would have been retried (2 × LOCK_RETRY_INTERVAL_S) and then refused:
      // the 200 above says it was not; the time is only reported (no bound a busy machine could break).
      expect(elapsedMs).toBeGreaterThan(0);
      console.info(`boot config under a held lock answered in ${elapsedMs.toFixed(0)} ms`);
      expect((await database.db('nodes').where({ uuid: node.uuid }).first('reservation')).reservation).toBe(conductor);

      // The contrast: an action needing the exclusive lock waits out the retries, then is refused.
      const lockedStarted = performance.now();
      const locked = await rest.provision(node.uuid, 'deleted');
      expect(locked.status, locked.text).toBe(409);
      expect(ironicFault(locked).faultstring).toContain(`is locked by host ${conductor},`);
      expect(performance.now() - lockedStarted).toBeGreaterThanOrEqual(2 * LOCK_RETRY_INTERVAL_S * 1000 - 100);
    } finally {
      await database.db('nodes').where({ uuid: node.uuid }).update({ reservation: null });
    }
  });

  it('refuses traversal and junk names with the identical 404; they never reach a conductor', async () => {
    const node = nodes[1] as BootNode;
    const owner = conductorNamed((await rest.node(node.uuid)).conductor);
    // Control: a well-formed name the boot interface does not know does reach the owner, which refuses it.
    const unknownName = await rawGet(apiUrl, bootPath(node, 'pxelinux.cfg'));
    expect(comparable(unknownName)).toEqual(comparable(reference));
    const controlId = unknownName.headers['openstack-request-id'] as string;
    const refusedByOwner = await owner.process.waitForLine(
      (l) => l.requestId === controlId && l.message === 'RPC call refused',
      5000,
    );
    expect(refusedByOwner).toMatchObject({ method: 'get_boot_config', code: 'BootConfigNotFound' });

    for (const name of [
      '..%2F..%2Fetc%2Fpasswd',
      '..%2f..%2f..%2fetc%2fshadow',
      '%2e%2e',
      '..',
      'boot.ipxe%00',
      '.boot.ipxe',
    ]) {
      const answer = await rawGet(apiUrl, bootPath(node, name));
      expect(comparable(answer), name).toEqual(comparable(reference));
      const requestId = answer.headers['openstack-request-id'] as string;
      expect(requestId).toMatch(/^req-/);
      await stack.api?.waitForLine(
        (l) => l.requestId === requestId && /^boot config refused/.test(l.message ?? ''),
        5000,
      );
      // Only the API logged this request: no conductor was called with it.
      const logged = linesWithRequestId(requestId).map((l) => l.process);
      expect(new Set(logged), name).toEqual(new Set(['api']));
    }
    // Traversal in the MAC position, and against a conductor's own file server.
    const inMac = await rawGet(apiUrl, '/v1/boot/..%2F..%2Fetc%2Fpasswd/boot.ipxe');
    expect(comparable(inMac)).toEqual(comparable(reference));
    const fileServer = await rawGet(httpUrlOf.get(owner.hostname) as string, '/..%2F..%2F..%2Fetc%2Fpasswd');
    expect(fileServer.status).toBe(404);
    expect(fileServer.body).not.toContain('root:');
  });

  it('with [api]restrict_boot_config, a node moved out of its wait (undeploy) answers the identical 404', async () => {
    const node = nodes[2] as BootNode;
    const { conductor } = await rest.node(node.uuid);
    expect((await rawGet(apiUrl, bootPath(node))).status).toBe(200);
    expect((await rest.provision(node.uuid, 'deleted')).status).toBe(202);
    await rest.settled(node.uuid, 'available');
    // Every answer is the identical 404. For up to one [database]boot_path_poll_interval the API's MAC
    // index may still show the wait state (the conductor, whose files are gone, refuses then); once it
    // has read the change, the refusal is the state's.
    let lastReason: unknown;
    const refused = await waitFor(
      'the refusal to name the state',
      async () => {
        const answer = await rawGet(apiUrl, bootPath(node));
        expect(comparable(answer)).toEqual(comparable(reference));
        const requestId = answer.headers['openstack-request-id'] as string;
        const line = await stack.api?.waitForLine((l) => l.requestId === requestId, 5000);
        lastReason = line?.reason;
        return line?.reason === 'state-not-allowed' ? line : undefined;
      },
      { timeoutMs: 5000, intervalMs: 50, describe: () => `last reason ${String(lastReason)}` },
    );
    expect(refused).toMatchObject({ reason: 'state-not-allowed', nodeUuid: node.uuid, detail: 'available' });
    // Its files are gone from the owner's root too.
    expect(
      (await rawGet(httpUrlOf.get(conductor as string) as string, `/pxelinux.cfg/${node.macHyphens}`)).status,
    ).toBe(404);
    nodes = nodes.filter((n) => n !== node);
  });

  it("after kill -9 of an owner, its nodes' scripts are served by the new owners, naming their http_url", async () => {
    const victim = stack.conductors[0] as ConductorProcess;
    const victimUrl = httpUrlOf.get(victim.hostname) as string;
    const ownerBefore = new Map(
      await Promise.all(nodes.map(async (n) => [n.uuid, (await rest.node(n.uuid)).conductor] as const)),
    );
    const orphaned = nodes.filter((n) => ownerBefore.get(n.uuid) === victim.hostname);
    const others = nodes.filter((n) => ownerBefore.get(n.uuid) !== victim.hostname);
    expect(orphaned.length).toBeGreaterThan(0);

    const killedAt = Date.now();
    victim.process.signal('SIGKILL');
    expect((await victim.process.exited).signal).toBe('SIGKILL');

    const served = new Map<string, string>();
    await waitFor(
      "the victim's nodes to be served by new owners",
      async () => {
        for (const node of orphaned.filter((n) => !served.has(n.uuid))) {
          const answer = await rawGet(apiUrl, bootPath(node));
          if (answer.status === 200 && !answer.body.includes(victimUrl)) served.set(node.uuid, answer.body);
        }
        return served.size === orphaned.length ? true : undefined;
      },
      {
        timeoutMs: 25_000,
        intervalMs: 200,
        describe: () => `${orphaned.length - served.size} of ${orphaned.length} not served by a new owner yet`,
      },
    );
    const servedAfterS = (Date.now() - killedAt) / 1000;
    expect(servedAfterS).toBeGreaterThanOrEqual(HEARTBEAT_TIMEOUT - 1);

    for (const node of orphaned) {
      const { conductor } = await rest.node(node.uuid);
      expect(conductor).not.toBe(victim.hostname);
      const newUrl = httpUrlOf.get(conductor as string) as string;
      expectScriptOf(served.get(node.uuid) as string, node.uuid, newUrl);
      expect((await rawGet(newUrl, `/pxelinux.cfg/${node.macHyphens}`)).body).toBe(served.get(node.uuid));
      expect(
        conductorNamed(conductor).process.lines.some(
          (l) => l.message === 'took the node over' && l.nodeUuid === node.uuid,
        ),
      ).toBe(true);
    }
    // Consistent hashing: the survivors' own nodes stayed where they were, still served as before.
    for (const node of others) {
      const owner = ownerBefore.get(node.uuid) as string;
      expect((await rest.node(node.uuid)).conductor).toBe(owner);
      expectScriptOf((await rawGet(apiUrl, bootPath(node))).body, node.uuid, httpUrlOf.get(owner) as string);
    }
    console.info(`${orphaned.length} nodes served by their new owners ${servedAfterS.toFixed(1)} s after kill -9`);
  });
});
