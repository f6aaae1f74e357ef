import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSilentLogger,
  ensureInstallCredentials,
  type InstallCredentials,
  loadConfig,
  Registry,
  TemporaryFailure,
  UnexpectedRpcError,
} from '@bmaas/common';
import { createStores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { ensureCertificate, ensureCertificateAuthority } from '@bmaas/pki';
import { ConductorRing, type JsonRpcClientConfig, JsonRpcConductorClient, RpcCallMetrics } from '@bmaas/rpc-client';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServices } from '../support/test-services.js';

/**
 * Real conductor processes and the API serving JSON-RPC over TLS with the
 * install's CA (what `npm start` and the compose file turn on), with
 * http_basic on top; this test process plays other API processes through
 * the JSON-RPC client, some of them misconfigured on purpose.
 */

const HEARTBEAT_TIMEOUT = 30;

let database: TestDatabase;
let services: Services;
let directory: string;
let tlsDirectory: string;
let credentials: InstallCredentials;
/** The [json_rpc] the processes read from credentials.conf: the JSON-RPC user and password. */
let rpcUser: { username: string; password: string };
const clients: JsonRpcConductorClient[] = [];

function clientWith(config: Partial<JsonRpcClientConfig>): JsonRpcConductorClient {
  const stores = createStores(database.db);
  const client = new JsonRpcConductorClient({
    ring: new ConductorRing({
      conductors: stores.conductors,
      heartbeatTimeout: HEARTBEAT_TIMEOUT,
      resetInterval: 1,
      logger: createSilentLogger(),
    }),
    config: {
      port: 8089,
      timeout: 10,
      use_ssl: true,
      cafile: ensureCertificateAuthority(tlsDirectory).certFile,
      ...rpcUser,
      ...config,
    },
    logger: createSilentLogger(),
    metrics: new RpcCallMetrics(new Registry(), 'client'),
  });
  clients.push(client);
  return client;
}

const properties = (client: JsonRpcConductorClient, hostname: string) =>
  client.call(hostname, 'get_driver_properties', { driver_name: 'fake-hardware' });

/** A plain-HTTP POST to the port: the answer's status, or the error that ended the exchange. */
function plainHttpPost(port: number): Promise<{ status: number } | { error: string }> {
  return new Promise((resolve) => {
    const request = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      },
    );
    request.setTimeout(5000, () => request.destroy(new Error('no answer in 5 s')));
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    request.end('{"jsonrpc":"2.0","id":1,"method":"get_driver_properties","params":{"driver_name":"fake-hardware"}}');
  });
}

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'bmaas-json-rpc-tls-'));
  tlsDirectory = join(directory, 'tls');
  // The install's credentials, as npm start makes them: http_basic for REST and JSON-RPC.
  credentials = ensureInstallCredentials(join(directory, 'credentials'));
  const config = loadConfig({ configFiles: [credentials.configFile], env: {} });
  rpcUser = { username: config.json_rpc.username as string, password: config.json_rpc.password as string };
  database = await createTestDatabase();
  services = await startTestServices({
    databaseUrl: database.url,
    conductors: 2,
    configFiles: [credentials.configFile],
    jsonRpcTlsDirectory: tlsDirectory,
    env: { BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: String(HEARTBEAT_TIMEOUT) },
  });
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await services?.stop();
  await database?.drop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe('JSON-RPC over TLS between real processes', () => {
  it('answers a client that trusts the install CA and sends the JSON-RPC credentials', async () => {
    const client = clientWith({});
    for (const conductor of services.conductors) {
      // fake-hardware has no driver properties: an empty object, from the conductor over TLS.
      await expect(properties(client, conductor.hostname)).resolves.toEqual({});
    }
  });

  it('carries the API’s calls: a REST route answered by a conductor over TLS', async () => {
    const response = await fetch(`${services.apiUrl}/v1/drivers/fake-hardware/properties`, {
      headers: {
        authorization: `Basic ${Buffer.from(`${credentials.apiUser}:${credentials.apiPassword}`).toString('base64')}`,
        'x-openstack-ironic-api-version': '1.1',
      },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({});
  });

  it('refuses plain HTTP on the JSON-RPC port: no HTTP answer, and the conductor says why in its log', async () => {
    const [conductor] = services.conductors;
    if (!conductor) throw new Error('no conductor');
    const outcome = await plainHttpPost(conductor.port);
    expect(outcome).not.toHaveProperty('status');
    expect(outcome).toEqual({ error: 'ECONNRESET' });
    await conductor.process.waitForLine(
      (line) => String(line.message).startsWith('JSON-RPC connection refused: a client spoke plain HTTP'),
      5000,
    );
    // And our client with use_ssl off gets nothing either: to it the conductor hung up.
    await expect(properties(clientWith({ use_ssl: false }), conductor.hostname)).rejects.toBeInstanceOf(
      TemporaryFailure,
    );
  });

  it('fails closed, with a clear error, in a client that does not trust the CA', async () => {
    const hostname = services.conductors[0]?.hostname as string;
    // The system's store only: our install's CA is in none.
    const systemStore = properties(clientWith({ cafile: null }), hostname);
    await expect(systemStore).rejects.toBeInstanceOf(UnexpectedRpcError);
    await expect(systemStore).rejects.toThrow(/TLS certificate is not trusted .*\[json_rpc\]cafile/);
    // Another install's CA.
    const other = ensureCertificateAuthority(join(directory, 'other-install'));
    await expect(properties(clientWith({ cafile: other.certFile }), hostname)).rejects.toThrow(
      /TLS certificate is not trusted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/,
    );
  });

  it('refuses a conductor whose certificate, signed by the CA, names another host', async () => {
    // Signed by the install CA, for a name this conductor is not reached by.
    const elsewhere = ensureCertificate({
      directory: tlsDirectory,
      commonName: 'conductor-elsewhere',
      dnsNames: ['conductor-elsewhere.example.test'],
      ipAddresses: ['192.0.2.77'],
    });
    const conductor = await services.startConductor({
      env: { BMAAS_JSON_RPC__CERT_FILE: elsewhere.certFile, BMAAS_JSON_RPC__KEY_FILE: elsewhere.keyFile },
    });
    const failure = properties(clientWith({}), conductor.hostname);
    await expect(failure).rejects.toBeInstanceOf(UnexpectedRpcError);
    await expect(failure).rejects.toThrow(/TLS certificate does not name the host it was reached at/);
  });

  it('keeps http_basic on top of TLS: the right CA without the password is refused', async () => {
    const hostname = services.conductors[1]?.hostname as string;
    await expect(properties(clientWith({ username: null, password: null }), hostname)).rejects.toThrow(
      /refused our JSON-RPC credentials/,
    );
    await expect(properties(clientWith({ password: 'not-the-password' }), hostname)).rejects.toThrow(
      /refused our JSON-RPC credentials/,
    );
  });
});
