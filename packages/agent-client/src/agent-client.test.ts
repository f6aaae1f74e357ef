import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger } from '@bmaas/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentClient,
  type AgentClientConfig,
  type AgentCommandFailure,
  type AgentCommandObserver,
  type AgentNode,
} from './agent-client.js';
import { AgentAPIError, AgentCommandFailed, AgentConnectionFailed, AgentInProgress } from './agent-errors.js';

const TOKEN = 'x'.repeat(43);

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

type Handler = (seen: Seen, res: http.ServerResponse) => void;

/** A real HTTP(S) server playing the agent: each test sets how it answers. */
class AgentDouble {
  readonly seen: Seen[] = [];
  handler: Handler = (_seen, res) => res.writeHead(500).end('{}');
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(tls?: { cert: string; key: string }): Promise<AgentDouble> {
    let double: AgentDouble | undefined;
    const listener: http.RequestListener = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://agent');
        const text = Buffer.concat(chunks).toString('utf8');
        const seen = {
          method: req.method ?? '',
          path: url.pathname,
          query: url.searchParams,
          body: text ? JSON.parse(text) : undefined,
        };
        double?.seen.push(seen);
        if (url.searchParams.get('agent_token') !== TOKEN) {
          res.writeHead(401, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ faultcode: 'Client', faultstring: 'Token invalid.' }));
          return;
        }
        double?.handler(seen, res);
      });
    };
    const server = tls ? https.createServer(tls, listener) : http.createServer(listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    double = new AgentDouble(server, `${tls ? 'https' : 'http'}://127.0.0.1:${port}`);
    return double;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function result(name: string, status = 'SUCCEEDED', extra: object = {}) {
  return {
    id: `id-${name}`,
    command_name: name,
    command_status: status,
    command_error: null,
    command_result: null,
    ...extra,
  };
}

const CONFIG: AgentClientConfig = {
  verify_ca: 'true',
  tls_minimum_version: '1.2',
  command_timeout: 2,
  max_command_attempts: 3,
  command_wait_interval: 0.01,
  command_wait_attempts: 5,
};

/** Records the failures the client reports. */
class FailureLog implements AgentCommandObserver {
  readonly failures: Array<[string, AgentCommandFailure]> = [];
  commandFailed(command: string, reason: AgentCommandFailure): void {
    this.failures.push([command, reason]);
  }
}

function client(
  config: Partial<AgentClientConfig> = {},
  observer: AgentCommandObserver = new FailureLog(),
): AgentClient {
  return new AgentClient({
    config: { ...CONFIG, ...config },
    logger: createSilentLogger(),
    observer,
    sleep: async () => {},
  });
}

function nodeAt(url: string, extra: Record<string, unknown> = {}): AgentNode {
  return {
    uuid: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
    driverInfo: {},
    driverInternalInfo: { agent_url: url, agent_secret_token: TOKEN, ...extra },
  };
}

describe('AgentClient against an HTTP agent', () => {
  let agent: AgentDouble;
  beforeAll(async () => {
    agent = await AgentDouble.start();
  });
  afterAll(() => agent.stop());
  afterEach(() => {
    agent.seen.length = 0;
  });

  it('posts to /v1/commands/ with the token, wait flag and JSON body, and returns the result', async () => {
    agent.handler = (_s, res) =>
      json(res, 200, result('get_deploy_steps', 'SUCCEEDED', { command_result: { deploy_steps: { x: [] } } }));
    const steps = await client().getDeploySteps(nodeAt(agent.url), { node: { uuid: 'n' }, ports: [] });
    expect(steps).toEqual({ deploy_steps: { x: [] } });
    const [seen] = agent.seen;
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/v1/commands/');
    expect(seen?.query.get('wait')).toBe('true');
    expect(seen?.query.get('agent_token')).toBe(TOKEN);
    expect(seen?.body).toEqual({ name: 'deploy.get_deploy_steps', params: { node: { uuid: 'n' }, ports: [] } });
  });

  it('sends step commands with wait=false and lists commands with the token too', async () => {
    agent.handler = (s, res) =>
      s.method === 'GET'
        ? json(res, 200, { commands: [result('get_deploy_steps'), result('execute_deploy_step', 'RUNNING')] })
        : json(res, 200, result('execute_deploy_step', 'RUNNING'));
    const started = await client().executeDeployStep(
      nodeAt(`${agent.url}/`),
      { step: 'write_image' },
      { node: {}, ports: [] },
    );
    expect(started.command_status).toBe('RUNNING');
    expect(agent.seen[0]?.query.get('wait')).toBe('false');
    expect((await client().lastCommand(nodeAt(agent.url)))?.command_name).toBe('execute_deploy_step');
    expect(agent.seen[1]?.method).toBe('GET');
    expect(agent.seen[1]?.path).toBe('/v1/commands/');
    expect(agent.seen[1]?.query.get('agent_token')).toBe(TOKEN);
  });

  it('maps 409 and "agent is busy" to AgentInProgress, other HTTP errors to AgentAPIError', async () => {
    agent.handler = (_s, res) =>
      json(res, 409, { faultcode: 'Client', faultstring: 'Agent is busy: executing command x' });
    await expect(client().powerOff(nodeAt(agent.url))).rejects.toBeInstanceOf(AgentInProgress);
    agent.handler = (_s, res) =>
      json(res, 500, { faultcode: 'Server', faultstring: 'Agent is busy: executing command y' });
    await expect(client().powerOff(nodeAt(agent.url))).rejects.toBeInstanceOf(AgentInProgress);
    agent.handler = (_s, res) =>
      json(res, 400, { faultcode: 'Client', faultstring: 'Invalid command: Unknown command: z' });
    await expect(client().powerOff(nodeAt(agent.url))).rejects.toThrow(/HTTP 400.*Unknown command: z/);
    const wrongToken = nodeAt(agent.url, { agent_secret_token: 'other' });
    const error = await client()
      .powerOff(wrongToken)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentAPIError);
    expect((error as AgentAPIError).httpStatus).toBe(401);
    agent.handler = (_s, res) => res.writeHead(200).end('<html>');
    await expect(client().powerOff(nodeAt(agent.url))).rejects.toThrow(/not JSON/);
  });

  it('turns a FAILED result into AgentCommandFailed carrying the agent message', async () => {
    agent.handler = (_s, res) =>
      json(
        res,
        200,
        result('get_clean_steps', 'FAILED', {
          command_error: { type: 'X', code: 500, message: 'disk on fire', details: '' },
        }),
      );
    const error = await client()
      .getCleanSteps(nodeAt(agent.url), { node: {}, ports: [] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentCommandFailed);
    expect((error as Error).message).toBe('clean.get_clean_steps failed: disk on fire');
  });

  it('tells its observer of each command that failed, refused or got no answer, not of a busy agent', async () => {
    const log = new FailureLog();
    agent.handler = (_s, res) =>
      json(res, 200, result('get_clean_steps', 'FAILED', { command_error: { message: 'x' } }));
    await expect(client({}, log).getCleanSteps(nodeAt(agent.url), { node: {}, ports: [] })).rejects.toThrow();
    agent.handler = (_s, res) => json(res, 400, { faultcode: 'Client', faultstring: 'Unknown command' });
    await expect(client({}, log).powerOff(nodeAt(agent.url))).rejects.toBeInstanceOf(AgentAPIError);
    agent.handler = (_s, res) => json(res, 409, { faultcode: 'Client', faultstring: 'Agent is busy' });
    await expect(client({}, log).powerOff(nodeAt(agent.url))).rejects.toBeInstanceOf(AgentInProgress);
    agent.handler = (_s, res) => json(res, 200, result('execute_deploy_step', 'SUCCEEDED'));
    await client({}, log).executeDeployStep(nodeAt(agent.url), { step: 'write_image' }, { node: {}, ports: [] });
    expect(log.failures).toEqual([
      ['get_clean_steps', 'failed'],
      ['power_off', 'refused'],
    ]);
  });

  it('treats a TypeError from the agent as an incompatible agent', async () => {
    agent.handler = (_s, res) =>
      json(res, 200, result('sync', 'FAILED', { command_error: { type: 'TypeError', message: 'unexpected kwarg' } }));
    await expect(client().sync(nodeAt(agent.url))).rejects.toThrow(/incompatible agent/);
  });

  it('retries a call that timed out and adopts the command the agent started anyway', async () => {
    let posts = 0;
    agent.handler = (s, res) => {
      if (s.method === 'GET') return json(res, 200, { commands: [result('execute_clean_step', 'RUNNING')] });
      posts++;
      // first POST: the agent starts the command but the answer never comes
      if (posts === 1) return;
      json(res, 500, { faultstring: 'must not be sent twice' });
    };
    const started = await client({ command_timeout: 0.3 }).executeCleanStep(
      nodeAt(agent.url),
      { step: 'erase' },
      { node: {}, ports: [] },
    );
    expect(started.command_status).toBe('RUNNING');
    expect(posts).toBe(1);
  });

  it('polls install_bootloader until it is no longer running', async () => {
    let lists = 0;
    agent.handler = (s, res) => {
      if (s.method === 'POST') return json(res, 200, result('install_bootloader', 'RUNNING'));
      lists++;
      json(res, 200, { commands: [result('install_bootloader', lists < 3 ? 'RUNNING' : 'SUCCEEDED')] });
    };
    const done = await client().installBootloader(nodeAt(agent.url), { root_uuid: 'r' });
    expect(done.command_status).toBe('SUCCEEDED');
    expect(lists).toBe(3);
    expect(agent.seen[0]?.query.get('wait')).toBe('false');
    agent.handler = (s, res) =>
      json(
        res,
        200,
        s.method === 'POST'
          ? result('install_bootloader', 'RUNNING')
          : { commands: [result('install_bootloader', 'RUNNING')] },
      );
    await expect(client().installBootloader(nodeAt(agent.url), {})).rejects.toThrow(/still running after 5 polls/);
  });

  it('refuses a node whose agent has not heartbeated', async () => {
    const node = { ...nodeAt(agent.url), driverInternalInfo: {} };
    await expect(client().sync(node)).rejects.toThrow(/has no agent URL/);
  });
});

describe('AgentClient when the agent does not answer', () => {
  it('gives up after max_command_attempts connection failures', async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve)); // nothing listens there now
    const log = new FailureLog();
    const error = await client({}, log)
      .sync(nodeAt(`http://127.0.0.1:${port}`))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentConnectionFailed);
    expect((error as Error).message).toMatch(/after 3 attempts: ECONNREFUSED/);
    expect(log.failures).toEqual([['sync', 'unreachable']]);
  });

  it('bounds every call by command_timeout', async () => {
    const hanging = await AgentDouble.start();
    hanging.handler = () => {};
    try {
      const started = Date.now();
      await expect(
        client({ command_timeout: 0.2, max_command_attempts: 2 }).lastCommand(nodeAt(hanging.url)),
      ).rejects.toThrow(/after 2 attempts: no answer within 0.2 s/);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(hanging.seen).toHaveLength(2);
    } finally {
      await hanging.stop();
    }
  });
});

describe('AgentClient TLS (agent auto-TLS)', () => {
  let dir: string;
  let agent: AgentDouble;
  let cert: string;
  let otherCert: string;

  function selfSigned(name: string): { cert: string; key: string } {
    const certFile = join(dir, `${name}.crt`);
    const keyFile = join(dir, `${name}.key`);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=ironic-python-agent',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-tls-'));
    const pair = selfSigned('agent');
    cert = pair.cert;
    otherCert = selfSigned('other').cert;
    agent = await AgentDouble.start(pair);
    agent.handler = (_s, res) => json(res, 200, result('sync'));
  });
  afterAll(async () => {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('trusts the certificate the agent sent (pinned) and nothing else', async () => {
    await expect(client().sync(nodeAt(agent.url, { agent_verify_ca: cert }))).resolves.toEqual({});
    await expect(
      client({ max_command_attempts: 1 }).sync(nodeAt(agent.url, { agent_verify_ca: otherCert })),
    ).rejects.toBeInstanceOf(AgentConnectionFailed);
    // without a pinned certificate the system CAs are used, which do not know it
    await expect(client({ max_command_attempts: 1 }).sync(nodeAt(agent.url))).rejects.toThrow(
      /self.signed|certificate/i,
    );
  });

  it('follows driver_info.agent_verify_ca, then [agent]verify_ca', async () => {
    const caFile = join(dir, 'agent.crt');
    await expect(client().sync({ ...nodeAt(agent.url), driverInfo: { agent_verify_ca: caFile } })).resolves.toEqual({});
    await expect(client().sync({ ...nodeAt(agent.url), driverInfo: { agent_verify_ca: 'false' } })).resolves.toEqual(
      {},
    );
    await expect(client({ verify_ca: 'false' }).sync(nodeAt(agent.url))).resolves.toEqual({});
    await expect(client({ verify_ca: caFile }).sync(nodeAt(agent.url))).resolves.toEqual({});
  });
});
