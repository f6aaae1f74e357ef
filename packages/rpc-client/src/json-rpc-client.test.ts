import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSilentLogger,
  freePort,
  NodeLocked,
  parsePrometheusText,
  Registry,
  RpcTimeout,
  sampleSum,
  TemporaryFailure,
  toErrorPayload,
  UnexpectedRpcError,
} from '@bmaas/common';
import { ensureCertificate } from '@bmaas/pki';
import { JSONRPCErrorException, JSONRPCServer } from 'json-rpc-2.0';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { conductorUrl, type JsonRpcClientConfig, JsonRpcConductorClient } from './json-rpc-client.js';
import { RpcCallMetrics } from './rpc-call-metrics.js';

/** How long the fake conductor takes for node 'slow'. */
const SLOW_CONDUCTOR_MS = 30_000;

const NODE = { uuid: '11111111-2222-4333-8444-555555555555', driver: 'fake-hardware', conductorGroup: '' };

/** A small JSON-RPC server standing in for a conductor; records what it received. */
function createFakeConductor(): { rpc: JSONRPCServer; received: unknown[] } {
  const rpc = new JSONRPCServer({ errorListener: () => {} });
  const received: unknown[] = [];
  rpc.addMethod('get_boot_config', async (params: { node_id: string; name: string }) => {
    received.push(params);
    // Far longer than any timeout below: a call that waits for it has not timed out.
    if (params.node_id === 'slow') await new Promise((resolve) => setTimeout(resolve, SLOW_CONDUCTOR_MS).unref());
    if (params.node_id === 'unknown') {
      const error = new NodeLocked(params.node_id, 'conductor-2');
      throw new JSONRPCErrorException(error.message, error.status, toErrorPayload(error));
    }
    return { content: `config ${params.name} of ${params.node_id}` };
  });
  rpc.addMethod('do_provisioning_action', async (params: { node_id: string }) => {
    received.push(params);
    if (params.node_id === 'locked') {
      const error = new NodeLocked(params.node_id, 'conductor-2');
      throw new JSONRPCErrorException(error.message, error.status, toErrorPayload(error));
    }
    throw new JSONRPCErrorException('boom', 500, { class: 'SomethingInternal', message: 'boom' });
  });
  rpc.addMethod('create_allocation', async (params: { allocation_id: string }) => {
    received.push(params);
    return null;
  });
  return { rpc, received };
}

async function serve(
  rpc: Pick<JSONRPCServer, 'receiveJSON'>,
  options: { tls?: { cert: Buffer; key: Buffer }; onConnection?: () => void; requireAuth?: string } = {},
): Promise<{ server: http.Server; port: number; authHeaders: Array<string | undefined> }> {
  const authHeaders: Array<string | undefined> = [];
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    authHeaders.push(req.headers.authorization);
    if (options.requireAuth && req.headers.authorization !== options.requireAuth) {
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const answer = await rpc.receiveJSON(Buffer.concat(chunks).toString());
      if (answer === null) res.writeHead(204).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  };
  const server = options.tls ? https.createServer(options.tls, listener) : http.createServer(listener);
  server.on('connection', () => options.onConnection?.());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, authHeaders };
}

const baseConfig: JsonRpcClientConfig = {
  port: 8089,
  timeout: 120,
  use_ssl: false,
  cafile: null,
  username: null,
  password: null,
};

/** A client whose ring names `host`; `ringRead` is what hostFor waits for when the ring cannot answer at once. */
function clientFor(host: string, config: Partial<JsonRpcClientConfig> = {}, ringRead?: Promise<string>) {
  const ring = {
    invalidations: 0,
    hostNow: () => (ringRead ? undefined : host),
    hostFor: async () => (ringRead ? ringRead : host),
    anyHost: async () => (ringRead ? ringRead : host),
    invalidate: () => ring.invalidations++,
  };
  const registry = new Registry();
  const client = new JsonRpcConductorClient({
    ring,
    config: { ...baseConfig, ...config },
    logger: createSilentLogger(),
    metrics: new RpcCallMetrics(registry, 'client'),
  });
  return { client, ring, registry };
}

const servers: http.Server[] = [];
const clients: JsonRpcConductorClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

describe('conductorUrl', () => {
  it.each([
    ['conductor-1', 8089, false, 'http://conductor-1:8089/'],
    ['conductor-1:9000', 8089, false, 'http://conductor-1:9000/'],
    ['127.0.0.1:41000', 8089, true, 'https://127.0.0.1:41000/'],
    ['[::1]:41000', 8089, false, 'http://[::1]:41000/'],
    ['::1', 8089, false, 'http://[::1]:8089/'],
  ])('%s', (hostname, port, ssl, expected) => {
    expect(conductorUrl(hostname, port, ssl).toString()).toBe(expected);
  });
});

describe('JsonRpcConductorClient', () => {
  it('calls the owner at host:port, sends the request id in context, and reuses one connection', async () => {
    const fake = createFakeConductor();
    let connections = 0;
    const { server, port } = await serve(fake.rpc, { onConnection: () => connections++ });
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);

    const result = await client.callForNode(
      NODE,
      'get_boot_config',
      { node_id: NODE.uuid, name: 'boot.ipxe' },
      {
        requestId: 'req-abc',
      },
    );
    expect(result).toEqual({ content: `config boot.ipxe of ${NODE.uuid}` });
    expect(fake.received[0]).toEqual({ node_id: NODE.uuid, name: 'boot.ipxe', context: { request_id: 'req-abc' } });

    for (let i = 0; i < 20; i++) await client.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' });
    expect(connections).toBe(1);
    // Without a given id, one is made up so the conductor's log still has one.
    expect((fake.received[1] as { context: { request_id: string } }).context.request_id).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(await client.hostFor(NODE)).toBe(`127.0.0.1:${port}`);
  });

  it('calls any alive conductor for work of no node (create_allocation), with the request id', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    expect(await client.callAny('create_allocation', { allocation_id: 'a-1' }, { requestId: 'req-any' })).toBeNull();
    expect(fake.received).toEqual([{ allocation_id: 'a-1', context: { request_id: 'req-any' } }]);
  });

  it('sends the get_boot_config calls of one turn to a conductor as one batch, each answered on its own', async () => {
    const fake = createFakeConductor();
    const bodies: string[] = [];
    const { server, port } = await serve({
      receiveJSON: (json: string) => {
        bodies.push(json);
        return fake.rpc.receiveJSON(json);
      },
    });
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);

    const results = await Promise.allSettled([
      client.callForNode(NODE, 'get_boot_config', { node_id: 'a', name: 'boot.ipxe' }, { requestId: 'req-a' }),
      client.callForNode(NODE, 'get_boot_config', { node_id: 'unknown', name: 'boot.ipxe' }),
      client.callForNode(NODE, 'get_boot_config', { node_id: 'b', name: 'boot.ipxe' }),
      // Other methods (locks, work) never wait in a batch.
      client.callForNode(NODE, 'do_provisioning_action', { node_id: 'locked', event: 'deploy' }),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).constructor.name))).toEqual([
      { content: 'config boot.ipxe of a' },
      'NodeLocked',
      { content: 'config boot.ipxe of b' },
      'NodeLocked',
    ]);
    const sent = bodies.map((b) => JSON.parse(b) as unknown);
    const batch = sent.find(Array.isArray) as Array<{ method: string; params: { context: unknown } }>;
    expect(batch.map((r) => r.method)).toEqual(['get_boot_config', 'get_boot_config', 'get_boot_config']);
    expect(batch[0]?.params.context).toEqual({ request_id: 'req-a' });
    expect(sent.filter((b) => !Array.isArray(b))).toHaveLength(1);

    // A lone call is sent as a plain request, not a batch of one.
    await client.callForNode(NODE, 'get_boot_config', { node_id: 'c', name: 'x' });
    expect(Array.isArray(JSON.parse(bodies.at(-1) as string))).toBe(false);
  });

  it('batches calls whose timeouts differ (the boot path passes what is left of each deadline)', async () => {
    const fake = createFakeConductor();
    const bodies: unknown[] = [];
    const { server, port } = await serve({
      receiveJSON: (json: string) => {
        bodies.push(JSON.parse(json));
        return fake.rpc.receiveJSON(json);
      },
    });
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    const answers = await Promise.all(
      [4000, 4997, 4990].map((timeoutMs, i) =>
        client.callForNode(NODE, 'get_boot_config', { node_id: `n${i}`, name: 'x' }, { timeoutMs }),
      ),
    );
    expect(answers.map((a) => a.content)).toEqual(['config x of n0', 'config x of n1', 'config x of n2']);
    expect(bodies).toHaveLength(1);
    expect((bodies[0] as unknown[]).length).toBe(3);
  });

  it('times a batched call out from when it was made, also while it waits for the batch before it', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    // The first batch is out until its exchange times out at 3 s; the second call is made 1 s in,
    // so its deadline is at ~4 s. Timed from when it was sent (~3 s) it would end at ~6 s.
    const first = client.callForNode(NODE, 'get_boot_config', { node_id: 'slow', name: 'x' }, { timeoutMs: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const secondMade = Date.now();
    const second = client.callForNode(NODE, 'get_boot_config', { node_id: 'slow', name: 'x' }, { timeoutMs: 3000 });
    await expect(first).rejects.toBeInstanceOf(RpcTimeout);
    await expect(second).rejects.toBeInstanceOf(RpcTimeout);
    // 3 s after it was made, not 5 s: the bound leaves a busy machine 1.5 s of slack either way.
    expect(Date.now() - secondMade).toBeLessThan(4500);
  });

  it('fails every call of a batch whose exchange failed', async () => {
    const { client } = clientFor(`127.0.0.1:${await freePort()}`);
    clients.push(client);
    const results = await Promise.allSettled(
      ['a', 'b'].map((node_id) => client.callForNode(NODE, 'get_boot_config', { node_id, name: 'x' })),
    );
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(TemporaryFailure);
    }
  });

  it('rethrows a domain error as the same class, with status and message', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);

    const error = await client
      .callForNode(NODE, 'do_provisioning_action', { node_id: 'locked', event: 'deploy' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeLocked);
    expect((error as NodeLocked).status).toBe(409);
    expect((error as NodeLocked).message).toBe(
      'Node locked is locked by host conductor-2, please retry after the current operation is completed.',
    );
  });

  it('turns an error outside the allow-list into UnexpectedRpcError', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    await expect(
      client.callForNode(NODE, 'do_provisioning_action', { node_id: 'other', event: 'deploy' }),
    ).rejects.toBeInstanceOf(UnexpectedRpcError);
  });

  it('gives up after timeoutMs with RpcTimeout', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    const started = Date.now();
    await expect(
      client.callForNode(NODE, 'get_boot_config', { node_id: 'slow', name: 'x' }, { timeoutMs: 200 }),
    ).rejects.toBeInstanceOf(RpcTimeout);
    // Long before the conductor's answer: the bound is generous for a busy machine.
    expect(Date.now() - started).toBeLessThan(SLOW_CONDUCTOR_MS / 2);
  });

  it('counts the timeout from the call when the ring must be read first, and bounds that read too', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const never = new Promise<string>(() => {});
    const hanging = clientFor(`127.0.0.1:${port}`, {}, never);
    clients.push(hanging.client);
    let started = Date.now();
    await expect(
      hanging.client.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' }, { timeoutMs: 200 }),
    ).rejects.toThrow(/Timed out after 0.2 s waiting for the conductor hash ring/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(SLOW_CONDUCTOR_MS / 2);

    // A read that takes most of the time leaves the call only the rest of it.
    const slowRead = clientFor(
      `127.0.0.1:${port}`,
      {},
      new Promise((resolve) => setTimeout(() => resolve(`127.0.0.1:${port}`), 150)),
    );
    clients.push(slowRead.client);
    started = Date.now();
    await expect(
      slowRead.client.callForNode(NODE, 'get_boot_config', { node_id: 'slow', name: 'x' }, { timeoutMs: 300 }),
    ).rejects.toThrow(/Timed out after 0\.\d+ s waiting for an answer from conductor/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(Date.now() - started).toBeLessThan(SLOW_CONDUCTOR_MS / 2);
    expect(await slowRead.client.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).toEqual(
      await hanging.client.call(`127.0.0.1:${port}`, 'get_boot_config', { node_id: 'n', name: 'x' }),
    );
  });

  it('answers TemporaryFailure and invalidates the ring when the conductor is gone', async () => {
    const { client, ring } = clientFor(`127.0.0.1:${await freePort()}`);
    clients.push(client);
    await expect(client.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).rejects.toBeInstanceOf(
      TemporaryFailure,
    );
    expect(ring.invalidations).toBe(1);
  });

  it('records each call by method and outcome with its latency', async () => {
    const fake = createFakeConductor();
    const { server, port } = await serve(fake.rpc);
    servers.push(server);
    const { client, registry } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    await client.callForNode(NODE, 'get_boot_config', { node_id: NODE.uuid, name: 'boot.ipxe' });
    await client.callForNode(NODE, 'get_boot_config', { node_id: NODE.uuid, name: 'grub.cfg' });
    await expect(client.callForNode(NODE, 'get_boot_config', { node_id: 'unknown', name: 'x' })).rejects.toThrow();
    await expect(
      client.callForNode(NODE, 'do_provisioning_action', { node_id: 'other', event: 'deploy' }),
    ).rejects.toThrow();
    await expect(
      client.callForNode(NODE, 'get_boot_config', { node_id: 'slow', name: 'x' }, { timeoutMs: 50 }),
    ).rejects.toBeInstanceOf(RpcTimeout);

    const samples = parsePrometheusText(await registry.metrics());
    const calls = (labels: Record<string, string>) =>
      sampleSum(samples, 'bmaas_rpc_client_call_duration_seconds_count', labels);
    expect(calls({ method: 'get_boot_config', outcome: 'ok' })).toBe(2);
    expect(calls({ method: 'get_boot_config', outcome: 'refused' })).toBe(1);
    expect(calls({ method: 'get_boot_config', outcome: 'timeout' })).toBe(1);
    expect(calls({ method: 'do_provisioning_action', outcome: 'error' })).toBe(1);
    expect(sampleSum(samples, 'bmaas_rpc_client_call_duration_seconds_sum', { outcome: 'timeout' })).toBeGreaterThan(
      0.04,
    );
  });

  it('records a conductor that is gone as unavailable', async () => {
    const { server, port } = await serve(createFakeConductor().rpc);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { client, registry } = clientFor(`127.0.0.1:${port}`);
    clients.push(client);
    await expect(
      client.callForNode(NODE, 'do_provisioning_action', { node_id: 'n', event: 'deploy' }),
    ).rejects.toThrow();
    const samples = parsePrometheusText(await registry.metrics());
    expect(
      sampleSum(samples, 'bmaas_rpc_client_call_duration_seconds_count', {
        method: 'do_provisioning_action',
        outcome: 'unavailable',
      }),
    ).toBe(1);
  });

  it('sends HTTP basic credentials and reports a refusal', async () => {
    const fake = createFakeConductor();
    const expected = `Basic ${Buffer.from('api:s3cret').toString('base64')}`;
    const { server, port, authHeaders } = await serve(fake.rpc, { requireAuth: expected });
    servers.push(server);
    const good = clientFor(`127.0.0.1:${port}`, { username: 'api', password: 's3cret' }).client;
    const bad = clientFor(`127.0.0.1:${port}`, { username: 'api', password: 'wrong' }).client;
    clients.push(good, bad);
    await expect(good.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).resolves.toEqual({
      content: 'config x of n',
    });
    await expect(bad.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).rejects.toThrow(
      /refused our JSON-RPC credentials/,
    );
    expect(authHeaders[0]).toBe(expected);
  });

  describe('over TLS', () => {
    let dir: string;
    let tls: { cert: Buffer; key: Buffer };
    let caFile: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'bmaas-rpc-tls-'));
      const files = ensureCertificate({ directory: dir, commonName: 'conductor', ipAddresses: ['127.0.0.1'] });
      tls = { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) };
      caFile = files.caFile;
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('trusts the CA in cafile and nothing else', async () => {
      const fake = createFakeConductor();
      const { server, port } = await serve(fake.rpc, { tls });
      servers.push(server);
      const trusting = clientFor(`127.0.0.1:${port}`, { use_ssl: true, cafile: caFile }).client;
      const untrusting = clientFor(`127.0.0.1:${port}`, { use_ssl: true }).client;
      clients.push(trusting, untrusting);
      await expect(trusting.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).resolves.toEqual({
        content: 'config x of n',
      });
      await expect(untrusting.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).rejects.toBeInstanceOf(
        UnexpectedRpcError,
      );
      await expect(untrusting.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' })).rejects.toThrow(
        /TLS certificate is not trusted .*\[json_rpc\]cafile must name the CA/,
      );
    });

    it('refuses a certificate that does not name the host it dialled, and never retries it', async () => {
      const fake = createFakeConductor();
      let connections = 0;
      const { server, port } = await serve(fake.rpc, { tls, onConnection: () => connections++ });
      servers.push(server);
      // The certificate names 127.0.0.1 only; this client dials "localhost".
      const { client } = clientFor(`localhost:${port}`, { use_ssl: true, cafile: caFile });
      clients.push(client);
      const call = client.callForNode(NODE, 'get_boot_config', { node_id: 'n', name: 'x' });
      await expect(call).rejects.toBeInstanceOf(UnexpectedRpcError);
      await expect(call).rejects.toThrow(/does not name the host it was reached at/);
      expect(connections).toBe(1);
    });
  });
});
