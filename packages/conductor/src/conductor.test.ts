import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  type BmaasConfig,
  BootConfigNotFound,
  createRootLogger,
  createSilentLogger,
  type DeepPartial,
  freePort,
  type NodeRecord,
  parsePrometheusText,
  Registry,
  sampleSum,
  TemporaryFailure,
  UnexpectedRpcError,
} from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { FakeBootInterface, fakeBootInterface } from '@bmaas/driver-api';
import { ConductorRing, JsonRpcConductorClient, RpcCallMetrics } from '@bmaas/rpc-client';
import bcrypt from 'bcryptjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Conductor, createConductor } from './conductor.js';
import { ConductorMetrics } from './metrics/conductor-metrics.js';
import type { DriverCatalog } from './registry/catalog.js';
import { DRIVER_CATALOG } from './registry/enabled-interfaces.js';
import { testConfig } from './testing/fixtures.js';

class CrashingBoot extends FakeBootInterface {
  override async getBootConfig(): Promise<string> {
    throw new TypeError('cannot read properties of undefined');
  }
}
const CATALOG: DriverCatalog = {
  ...DRIVER_CATALOG,
  interfaces: {
    ...DRIVER_CATALOG.interfaces,
    boot: [
      ...DRIVER_CATALOG.interfaces.boot,
      { ...fakeBootInterface, name: 'crashing', create: () => new CrashingBoot() },
    ],
  },
  hardwareTypes: DRIVER_CATALOG.hardwareTypes.map((hw) =>
    hw.supported.boot ? { ...hw, supported: { ...hw.supported, boot: [...hw.supported.boot, 'crashing'] } } : hw,
  ),
};

let database: TestDatabase;
let stores: Stores;
let tmp: string;
const running: Conductor[] = [];
const clients: JsonRpcConductorClient[] = [];

async function startConductor(
  overrides: DeepPartial<BmaasConfig> = {},
): Promise<{ conductor: Conductor; logs: () => Array<Record<string, unknown>>; metrics: ConductorMetrics }> {
  const port = await freePort();
  const config = testConfig({
    ...overrides,
    DEFAULT: { host: '127.0.0.1', enabled_boot_interfaces: ['fake', 'crashing'], ...overrides.DEFAULT },
    json_rpc: { host_ip: '127.0.0.1', port, ...overrides.json_rpc },
    conductor: { heartbeat_interval: 1, heartbeat_timeout: 5, ...overrides.conductor },
  });
  const stream = new PassThrough();
  const lines: Array<Record<string, unknown>> = [];
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  const logger = createRootLogger({ level: 'debug', format: 'json', stream });
  const metrics = new ConductorMetrics(new Registry());
  const conductor = createConductor({ config, stores, logger, catalog: CATALOG, metrics });
  running.push(conductor);
  await conductor.start();
  return { conductor, logs: () => lines, metrics };
}

function clientFor(
  options: { username?: string; password?: string; useSsl?: boolean; cafile?: string } = {},
): JsonRpcConductorClient {
  const ring = new ConductorRing({
    conductors: stores.conductors,
    heartbeatTimeout: 5,
    resetInterval: 0.05,
    logger: createSilentLogger(),
  });
  const client = new JsonRpcConductorClient({
    ring,
    config: {
      port: 8089,
      timeout: 10,
      use_ssl: options.useSsl ?? false,
      cafile: options.cafile ?? null,
      username: options.username ?? null,
      password: options.password ?? null,
    },
    logger: createSilentLogger(),
    metrics: new RpcCallMetrics(new Registry(), 'client'),
  });
  clients.push(client);
  return client;
}

function post(
  port: number,
  body: string,
  headers: http.OutgoingHttpHeaders = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function reload(node: NodeRecord): Promise<NodeRecord> {
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  tmp = mkdtempSync(join(tmpdir(), 'bmaas-conductor-test-'));
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(running.splice(0).map((c) => c.stop()));
  await database.db('nodes').delete();
  await database.db('conductors').delete();
});
afterAll(async () => {
  await database?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('conductor', () => {
  it('registers as host:port with its hardware types and interfaces, and goes offline at once on stop', async () => {
    const { conductor } = await startConductor();
    const port = conductor.rpcAddress?.port;
    expect(conductor.hostname).toBe(`127.0.0.1:${port}`);
    const row = await stores.conductors.get(conductor.hostname, 5);
    expect(row).toMatchObject({ id: conductor.id, online: true, alive: true, drivers: ['fake-hardware'] });
    const interfaces = await stores.conductors.aliveInterfaces(5);
    expect(
      interfaces
        .filter((i) => i.isDefault)
        .map((i) => `${i.interfaceType}:${i.interfaceName}`)
        .sort(),
    ).toEqual([
      'bios:no-bios',
      'boot:fake',
      'console:no-console',
      'deploy:fake',
      'firmware:no-firmware',
      'inspect:no-inspect',
      'management:fake',
      'network:noop',
      'power:fake',
      'raid:no-raid',
      'rescue:no-rescue',
      'storage:noop',
      'vendor:no-vendor',
    ]);
    await conductor.stop();
    expect(await stores.conductors.get(conductor.hostname, 5)).toMatchObject({ online: false, alive: false });
  });

  it("runs provision actions sent over JSON-RPC, logging the caller's request id", async () => {
    const { conductor, logs } = await startConductor();
    const client = clientFor();
    const node = await createNode(stores);
    await client.callForNode(
      node,
      'do_provisioning_action',
      { node_id: node.uuid, event: 'manage' },
      {
        requestId: 'req-test-1',
      },
    );
    expect(await conductor.tasks.drain(30_000)).toBe(true);
    expect((await reload(node)).provisionState).toBe('manageable');
    const accepted = logs().find((l) => l.message === 'provision action accepted');
    expect(accepted).toMatchObject({ requestId: 'req-test-1', nodeUuid: node.uuid, action: 'manage' });
  });

  it('serves boot configs under a shared lock and rethrows BootConfigNotFound', async () => {
    await startConductor();
    const client = clientFor();
    const node = await createNode(
      stores,
      {},
      { provisionState: 'wait call-back', driverInternalInfo: { fake_boot: 'ramdisk:deploy' } },
    );
    await stores.nodeLocks.reserve(node.id, 'someone-else');
    expect(await client.callForNode(node, 'get_boot_config', { node_id: node.uuid, name: 'boot.fake' })).toEqual({
      content: `fake boot config for ${node.uuid}: ramdisk:deploy\n`,
    });
    const error = await client
      .callForNode(node, 'get_boot_config', { node_id: node.uuid, name: 'boot.ipxe' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BootConfigNotFound);
    expect((error as BootConfigNotFound).status).toBe(404);
  });

  it('answers unexpected errors with a generic 500 and logs them', async () => {
    const { logs } = await startConductor();
    const client = clientFor();
    const node = await createNode(stores, { bootInterface: 'crashing' });
    const error = await client
      .callForNode(node, 'get_boot_config', { node_id: node.uuid, name: 'boot.fake' }, { requestId: 'req-crash' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedRpcError);
    expect((error as Error).message).toContain('Internal error in the conductor; see its log.');
    expect((error as Error).message).not.toContain('cannot read properties');
    expect(logs().find((l) => l.message === 'unexpected error in an RPC method')).toMatchObject({
      requestId: 'req-crash',
      error: 'cannot read properties of undefined',
    });
  });

  it('answers 204 to a notification and -32601 to an unknown method', async () => {
    const { conductor } = await startConductor();
    const port = conductor.rpcAddress?.port as number;
    const node = await createNode(stores);
    const notification = JSON.stringify({
      jsonrpc: '2.0',
      method: 'do_provisioning_action',
      params: { node_id: node.uuid, event: 'manage' },
    });
    expect((await post(port, notification)).status).toBe(204);
    const unknown = await post(port, JSON.stringify({ jsonrpc: '2.0', method: 'reboot_the_world', params: {}, id: 1 }));
    expect(JSON.parse(unknown.body)).toMatchObject({ id: 1, error: { code: -32601 } });
  });

  it('checks HTTP basic credentials against an htpasswd file', async () => {
    const htpasswd = join(tmp, 'htpasswd-json-rpc');
    writeFileSync(htpasswd, `api:${bcrypt.hashSync('s3cret', 4)}\n`);
    const { conductor } = await startConductor({
      json_rpc: { auth_strategy: 'http_basic', http_basic_auth_user_file: htpasswd },
    });
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'get_boot_config', params: {}, id: 1 });
    const refused = await post(conductor.rpcAddress?.port as number, body);
    expect(refused.status).toBe(401);
    // The metrics are behind the same credentials.
    const metricsUrl = `http://127.0.0.1:${conductor.rpcAddress?.port}/metrics`;
    expect((await fetch(metricsUrl)).status).toBe(401);
    const scrape = await fetch(metricsUrl, { headers: { authorization: `Basic ${btoa('api:s3cret')}` } });
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toContain('bmaas_conductor_heartbeats_total');
    const node = await createNode(stores);
    await expect(
      clientFor({ username: 'api', password: 'wrong' }).callForNode(node, 'do_provisioning_action', {
        node_id: node.uuid,
        event: 'manage',
      }),
    ).rejects.toBeInstanceOf(UnexpectedRpcError);
    await clientFor({ username: 'api', password: 's3cret' }).callForNode(node, 'do_provisioning_action', {
      node_id: node.uuid,
      event: 'manage',
    });
    expect(await conductor.tasks.drain(30_000)).toBe(true);
    expect((await reload(node)).provisionState).toBe('manageable');
  });

  it('serves JSON-RPC over TLS to a client trusting its certificate', async () => {
    const cert = join(tmp, 'cert.pem');
    const key = join(tmp, 'key.pem');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1'].concat([
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ]),
      { stdio: 'ignore' },
    );
    const { conductor } = await startConductor({ json_rpc: { use_ssl: true, cert_file: cert, key_file: key } });
    const node = await createNode(stores);
    await clientFor({ useSsl: true, cafile: cert }).callForNode(node, 'do_provisioning_action', {
      node_id: node.uuid,
      event: 'manage',
    });
    expect(await conductor.tasks.drain(30_000)).toBe(true);
    expect((await reload(node)).provisionState).toBe('manageable');
  });

  it('serves [deploy]http_root on the port of [deploy]http_url when asked to', async () => {
    const root = join(tmp, 'httpboot');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'boot.ipxe'), '#!ipxe\n');
    const port = await freePort();
    const { conductor } = await startConductor({
      deploy: {
        serve_http_root: true,
        http_root: root,
        http_url: `http://127.0.0.1:${port}`,
        http_server_host_ip: '127.0.0.1',
      },
    });
    expect(conductor.fileServerAddress?.port).toBe(port);
    const answer = await fetch(`http://127.0.0.1:${port}/boot.ipxe`);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('#!ipxe\n');
    await conductor.stop();
    await expect(fetch(`http://127.0.0.1:${port}/boot.ipxe`)).rejects.toThrow();
  });

  it('refuses calls once stopping, and fails what it left in a transient state on its next start', async () => {
    const { conductor } = await startConductor();
    const client = clientFor();
    const node = await createNode(stores, {}, { provisionState: 'deploying' });
    await stores.nodeLocks.reserve(node.id, conductor.hostname);
    await conductor.stop();
    await expect(
      client.call(conductor.hostname, 'do_provisioning_action', { node_id: node.uuid, event: 'manage' }),
    ).rejects.toBeInstanceOf(TemporaryFailure);
    // stop() released its locks; a lock left by a crash is found again by the next start.
    expect((await reload(node)).reservation).toBeNull();
    await stores.nodeLocks.reserve(node.id, conductor.hostname);
    await startConductor({ json_rpc: { port: conductor.rpcAddress?.port } });
    expect(await reload(node)).toMatchObject({ provisionState: 'deploy failed', reservation: null });
    expect((await reload(node)).lastError).toMatch(/stopped or died while the node was in "deploying"/);
  });

  it('takes over the nodes of a conductor that left, rebuilding their boot files', async () => {
    const a = await startConductor({ DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] } });
    const b = await startConductor({ DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] } });
    const nodes = await Promise.all(
      Array.from({ length: 6 }, () =>
        createNode(
          stores,
          { deployInterface: 'direct' },
          { provisionState: 'wait call-back', conductorAffinity: a.conductor.id },
        ),
      ),
    );
    await a.conductor.stop();
    await b.conductor.runPeriodicChecks();
    for (const node of nodes) {
      expect(await reload(node)).toMatchObject({
        conductorAffinity: b.conductor.id,
        reservation: null,
        driverInternalInfo: { fake_boot: 'ramdisk:deploy' },
      });
    }
    expect(b.logs().filter((l) => l.message === 'took the node over')).toHaveLength(6);
    const samples = parsePrometheusText(await b.metrics.registry.metrics());
    expect(sampleSum(samples, 'bmaas_conductor_takeover_nodes_total')).toBe(6);
  });

  it('fails timed-out waits and recovers nodes locked by a dead conductor', async () => {
    const { conductor } = await startConductor({
      DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] },
      conductor: { deploy_callback_timeout: 60 },
    });
    const late = await createNode(
      stores,
      { deployInterface: 'direct' },
      { provisionState: 'wait call-back', provisionUpdatedAt: new Date(Date.now() - 120_000) },
    );
    const fresh = await createNode(
      stores,
      { deployInterface: 'direct' },
      { provisionState: 'wait call-back', provisionUpdatedAt: new Date() },
    );
    await stores.conductors.register({
      hostname: 'dead-one',
      conductorGroup: '',
      drivers: ['fake-hardware'],
      interfaces: [],
    });
    await database
      .db('conductors')
      .where({ hostname: 'dead-one' })
      .update({ updated_at: database.db.raw("now() - interval '1 hour'") });
    const orphan = await createNode(stores, {}, { provisionState: 'cleaning' });
    await stores.nodeLocks.reserve(orphan.id, 'dead-one');
    const lateInMaintenance = await createNode(
      stores,
      { deployInterface: 'direct' },
      { provisionState: 'wait call-back', provisionUpdatedAt: new Date(Date.now() - 120_000), maintenance: true },
    );
    const leftUnlocked = await createNode(stores, {}, { provisionState: 'deploying' });
    await stores.conductors.register({ hostname: 'live-one', conductorGroup: '', drivers: [], interfaces: [] });
    const busy = await createNode(stores, {}, { provisionState: 'deploying' });
    await stores.nodeLocks.reserve(busy.id, 'live-one');

    await conductor.runPeriodicChecks();
    expect((await reload(late)).provisionState).toBe('deploy failed');
    expect((await reload(fresh)).provisionState).toBe('wait call-back');
    expect((await reload(lateInMaintenance)).provisionState).toBe('wait call-back');
    expect(await reload(orphan)).toMatchObject({ provisionState: 'clean failed', reservation: null });
    expect(await reload(leftUnlocked)).toMatchObject({ provisionState: 'deploy failed', reservation: null });
    expect(await reload(busy)).toMatchObject({ provisionState: 'deploying', reservation: 'live-one' });
  });
});
