import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { freePort, freePortBlock, portIsFree, until, waitFor } from '@bmaas/common';
import { stateTempDir } from '@bmaas/db/testing';
import { SERVER_NODE_FLAGS } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bannerPids,
  commandLines,
  descendants,
  installLogin as loginOf,
  STACK_MAIN,
  StackRun,
  stackEnvironment,
  stillRunning,
} from './stack-run.js';

/**
 * `npm start` as an operator runs it: the built launcher from a clean state
 * directory, with the embedded PostgreSQL, the API and the conductors as real
 * processes on free loopback ports. Tests run in order and share the state
 * directory (the second start reuses the initialised database).
 */

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 30_000;

let stateDir: string;
let apiPort: number;
let databasePort: number;
let rpcBase: number;
let httpBase: number;
const runs: StackRun[] = [];
/** API and conductor PIDs a killed stack left running. */
let leftovers: number[] = [];

/** The status of an HTTPS POST of `body` to `url`, trusting `ca`. */
function httpsPost(url: string, body: string, ca: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = https.request(
      url,
      { method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    request.setTimeout(5000, () => request.destroy(new Error(`no answer from ${url} in 5 s`)));
    request.on('error', reject);
    request.end(body);
  });
}

function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return stackEnvironment(stateDir, databasePort, extra);
}

function startStack(conductors: number, extraEnv: Record<string, string> = {}): StackRun {
  const args = [
    '--conductors',
    String(conductors),
    '--api-port',
    String(apiPort),
    '--json-rpc-base-port',
    String(rpcBase),
    '--http-base-port',
    String(httpBase),
  ];
  const run = new StackRun(args, environment(extraEnv));
  runs.push(run);
  return run;
}

/** Every port a stack of `conductors` conductors listens on. */
function stackPorts(conductors: number): number[] {
  const numbered = Array.from({ length: conductors }, (_, i) => [rpcBase + i + 1, httpBase + i + 1]).flat();
  return [apiPort, databasePort, ...numbered];
}

/** The Authorization header of the user `npm start` made for this state directory. */
function installLogin(): string {
  return loginOf(stateDir);
}

/** One request through the REST client, as the install's user (the stack's state directory changes between tests). */
async function api<T>(
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const client = new ApiClient(`http://127.0.0.1:${apiPort}`, {
    version: 'latest',
    headers: { Authorization: installLogin() },
    timeoutMs: 5000,
  });
  try {
    const { status, body } = await client.request<T>(init.method ?? 'GET', path, init.body);
    return { status, body };
  } finally {
    client.close();
  }
}

async function provisionTo(uuid: string, target: string, expected: string): Promise<Record<string, unknown>> {
  const answer = await api(`/v1/nodes/${uuid}/states/provision`, { method: 'PUT', body: { target } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  let node: Record<string, unknown> = {};
  return waitFor(
    `node ${uuid} to reach ${expected}`,
    async () => {
      node = (await api<Record<string, unknown>>(`/v1/nodes/${uuid}`)).body;
      return node.provision_state === expected && !node.target_provision_state ? node : undefined;
    },
    { timeoutMs: 20_000, describe: () => JSON.stringify(node) },
  );
}

/** No process of the tree seen while the stack ran, no port of it held, no PID file. */
async function expectNothingLeft(run: StackRun, tree: readonly number[], conductors: number): Promise<void> {
  expect(commandLines(stillRunning([run.pid, ...tree])), 'processes left behind').toEqual([]);
  for (const port of stackPorts(conductors)) expect(await portIsFree(port), `port ${port} still held`).toBe(true);
  expect(existsSync(join(stateDir, 'stack.pid'))).toBe(false);
}

/**
 * Stops a running stack with `stop`, then checks it exited 0, in order, and
 * left no process (from the tree seen while it ran) and no listening port.
 */
async function expectCleanStop(run: StackRun, conductors: number, stop: () => void): Promise<void> {
  const tree = descendants(run.pid);
  const pids = bannerPids(run);
  expect(tree).toEqual(expect.arrayContaining([...pids.entries()].filter(([n]) => n !== 'stack').map(([, p]) => p)));
  expect(pids.get('stack')).toBe(run.pid);
  expect(pids.get('postgres')).toBeGreaterThan(0);

  stop();
  const status = await run.waitForExit(STOP_TIMEOUT_MS);
  expect(status, run.tail()).toEqual({ code: 0, signal: null });
  await expectNothingLeft(run, tree, conductors);

  expect(run.output).not.toMatch(/unclean stop|second signal|shutting down|exited on its own|did not start/);
  // The order the stack chose: every conductor stopped, then the API, then the database.
  const conductorsStopped = [...run.output.matchAll(/^\[conductor-\d+\] .*"message":"conductor stopped"/gm)];
  expect(conductorsStopped).toHaveLength(conductors);
  const apiStopping = run.output.search(/^\[api\] .*received, stopping/m);
  expect(apiStopping).toBeGreaterThan(Math.max(...conductorsStopped.map((m) => m.index ?? 0)));
  const apiStopped = run.output.search(/^\[api\] .*"message":"API stopped"/m);
  expect(apiStopped).toBeGreaterThan(apiStopping);
  expect(run.output.search(/^\[database\] .*stopping the embedded PostgreSQL/m)).toBeGreaterThan(apiStopped);
}

beforeAll(async () => {
  if (!existsSync(STACK_MAIN)) throw new Error(`${STACK_MAIN} is missing: build first (npx tsc -b packages/stack)`);
  stateDir = stateTempDir('bmaas-stack-');
  apiPort = await freePort();
  databasePort = await freePort();
  rpcBase = await freePortBlock(3);
  httpBase = await freePortBlock(3);
});

afterAll(() => {
  for (const run of runs) if (run.running) run.killGroup();
  for (const pid of stillRunning(leftovers)) process.kill(-pid, 'SIGKILL');
  rmSync(stateDir, { recursive: true, force: true });
});

describe('npm start: the native stack', () => {
  let run: StackRun;

  it('starts from a clean state, past a stale PID file: three alive conductors with file servers', async () => {
    // The PID file of a crashed run: its process is gone.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(join(stateDir, 'stack.pid'), `${gone.stdout}\n`);

    run = startStack(3);
    await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);

    const { body } = await api<{ conductors: Array<{ hostname: string; alive: boolean }> }>('/v1/conductors');
    const alive = body.conductors.filter((c) => c.alive).map((c) => c.hostname);
    expect(alive.sort()).toEqual([1, 2, 3].map((i) => `127.0.0.1:${rpcBase + i}`).sort());
    for (const i of [1, 2, 3]) {
      const response = await fetch(`http://127.0.0.1:${httpBase + i}/boot.ipxe`, { signal: AbortSignal.timeout(5000) });
      expect(response.status).toBe(200);
      expect(await response.text()).toMatch(/^#!ipxe/);
    }
    expect(run.output).toContain(
      `export OS_AUTH_TYPE=http_basic OS_ENDPOINT=http://127.0.0.1:${apiPort} OS_USERNAME=admin OS_PASSWORD="$(cat ${join(stateDir, 'credentials', 'api-password')})"`,
    );
    expect(run.output).toContain('baremetal node create --driver fake-hardware');
    // The API and the conductors run with the servers' node flags; the database process without.
    const pids = bannerPids(run);
    const nodeFlagsOf = (name: string) => {
      const argv = readFileSync(`/proc/${pids.get(name)}/cmdline`, 'utf8').split('\0');
      return argv.slice(
        1,
        argv.findIndex((arg) => arg.endsWith('.js')),
      );
    };
    for (const name of ['api', 'conductor-1', 'conductor-2', 'conductor-3']) {
      expect(nodeFlagsOf(name), name).toEqual(SERVER_NODE_FLAGS);
    }
    expect(nodeFlagsOf('database')).toEqual([]);
  });

  it('is authenticated end to end with credentials of its own: REST and every conductor refuse strangers', async () => {
    expect(statSync(join(stateDir, 'credentials')).mode & 0o777).toBe(0o700);
    expect(statSync(join(stateDir, 'credentials', 'api-password')).mode & 0o777).toBe(0o600);
    const anonymous = await fetch(`http://127.0.0.1:${apiPort}/v1/nodes`, { signal: AbortSignal.timeout(5000) });
    expect(anonymous.status).toBe(401);
    const powerOn = JSON.stringify({
      jsonrpc: '2.0',
      method: 'change_node_power_state',
      params: { node_id: 'any', new_state: 'power on' },
      id: 1,
    });
    // JSON-RPC is TLS with the install's CA: a stranger who trusts it still needs the password…
    const ca = readFileSync(join(stateDir, 'credentials', 'tls', 'ca', 'cert.pem'));
    for (const i of [1, 2, 3]) {
      expect(await httpsPost(`https://127.0.0.1:${rpcBase + i}/`, powerOn, ca), `conductor-${i}`).toBe(401);
      expect(statSync(join(stateDir, 'credentials', 'tls', `conductor-${i}`, 'key.pem')).mode & 0o777).toBe(0o600);
      // …and plain HTTP gets no answer at all.
      await expect(
        fetch(`http://127.0.0.1:${rpcBase + i}/`, { method: 'POST', body: powerOn, signal: AbortSignal.timeout(5000) }),
      ).rejects.toThrow();
    }
  });

  it('enrols a fake-hardware node and deploys it through the REST API', async () => {
    const created = await api<{ uuid: string; provision_state: string }>('/v1/nodes', {
      method: 'POST',
      body: { driver: 'fake-hardware', name: 'node-1' },
    });
    expect(created.status).toBe(201);
    expect(created.body.provision_state).toBe('enroll');
    const { uuid } = created.body;
    const port = await api('/v1/ports', { method: 'POST', body: { address: '52:54:00:12:34:56', node_uuid: uuid } });
    expect(port.status).toBe(201);

    await provisionTo(uuid, 'manage', 'manageable');
    await provisionTo(uuid, 'provide', 'available');
    const deployed = await provisionTo(uuid, 'active', 'active');
    expect([1, 2, 3].map((i) => `127.0.0.1:${rpcBase + i}`)).toContain(deployed.conductor);
  });

  it('refuses a second start while one runs, naming the running PID', async () => {
    const second = startStack(3);
    const status = await second.waitForExit(20_000);
    expect(status.code).toBe(1);
    expect(second.output).toContain(`A stack is already running from this state directory (pid ${run.pid}`);
    expect(run.running).toBe(true);
  });

  it('stops everything on Ctrl-C (SIGINT to the whole process group): conductors, API, database', async () => {
    await expectCleanStop(run, 3, () => run.interruptGroup());
  });

  it('when the stack is killed outright, its database process stops PostgreSQL by itself', async () => {
    run = startStack(1);
    await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);
    const pids = bannerPids(run);
    const database = [pids.get('database'), pids.get('postgres')] as number[];
    const tree = descendants(pids.get('database') as number);
    expect(tree).toContain(pids.get('postgres'));
    run.signal('SIGKILL');
    await run.waitForExit(5000);
    // The database process sees its standard input close and stops the server (a fast shutdown).
    await waitFor(
      'the database processes to stop',
      until(() => stillRunning([...database, ...tree]).length === 0),
      {
        timeoutMs: 20_000,
        describe: () => commandLines(stillRunning([...database, ...tree])).join('; '),
      },
    );
    leftovers = [pids.get('api'), pids.get('conductor-1')] as number[];
  });

  it('stops the processes a killed stack left, then starts; SIGTERM to the stack alone stops everything', async () => {
    run = startStack(1);
    await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);
    expect(run.output).toMatch(/stopping processes left by a stack that did not stop them: .*api \d+/);
    expect(stillRunning(leftovers)).toEqual([]);
    const { body } = await api<{ conductors: Array<{ hostname: string; alive: boolean }> }>('/v1/conductors');
    expect(body.conductors.filter((c) => c.alive).map((c) => c.hostname)).toEqual([`127.0.0.1:${rpcBase + 1}`]);
    await expectCleanStop(run, 1, () => run.signal('SIGTERM'));
  });

  it("comes up with the operator's own http_basic user file, whose passwords it does not know", async () => {
    const htpasswd = join(stateDir, 'operators.htpasswd');
    // bcrypt of "ops-secret", as `htpasswd -B` writes it.
    writeFileSync(htpasswd, 'ops:$2b$04$3rk/qgZa.JFrCidHMGtF6unirnCHFArxrfq9RXgVZM/YUtD4NIzla\n');
    run = startStack(1, {
      BMAAS_DEFAULT__AUTH_STRATEGY: 'http_basic',
      BMAAS_DEFAULT__HTTP_BASIC_AUTH_USER_FILE: htpasswd,
    });
    await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);
    expect(run.output).toContain(`OS_USERNAME=<user> OS_PASSWORD=<password>  # from ${htpasswd}`);
    const nodes = (authorization?: string) =>
      fetch(`http://127.0.0.1:${apiPort}/v1/nodes`, {
        headers: authorization ? { Authorization: authorization } : {},
        signal: AbortSignal.timeout(5000),
      });
    expect((await nodes()).status).toBe(401);
    expect((await nodes(installLogin())).status).toBe(401);
    expect((await nodes(`Basic ${Buffer.from('ops:ops-secret').toString('base64')}`)).status).toBe(200);
    await expectCleanStop(run, 1, () => run.signal('SIGTERM'));
  });

  it('restarts a conductor or the API that died, saying why; only SIGTERM stops everything', async () => {
    run = startStack(2);
    await run.waitForOutput(/Press Ctrl-C/, START_TIMEOUT_MS);
    const pids = bannerPids(run);
    process.kill(pids.get('conductor-1') as number, 'SIGKILL');
    process.kill(pids.get('api') as number, 'SIGKILL');
    await run.waitForOutput(
      /conductor-1 \(pid \d+\) exited on its own \(killed by SIGKILL\); restarting it in 1 s/,
      10_000,
    );
    await run.waitForOutput(/api \(pid \d+\) exited on its own \(killed by SIGKILL\); restarting it in 1 s/, 10_000);
    const restarted = await run.waitForOutput(/api restarted \(pid (\d+)\)/, 20_000);
    await run.waitForOutput(/conductor-1 restarted \(pid \d+\)/, 20_000);
    expect(run.running).toBe(true);
    const apiPid = Number(restarted[1]);
    expect(apiPid).not.toBe(pids.get('api'));
    // The new API answers, and the restarted conductor is alive again.
    let alive: string[] = [];
    await waitFor(
      'both conductors alive after the restarts',
      async () => {
        const answer = await api<{ conductors: Array<{ hostname: string; alive: boolean }> }>('/v1/conductors').catch(
          () => undefined,
        );
        alive = answer?.body.conductors?.filter((c) => c.alive).map((c) => c.hostname) ?? [];
        return alive.length === 2 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, describe: () => `alive: ${alive.join(', ')}` },
    );
    const tree = descendants(run.pid);
    expect(tree).toContain(apiPid);
    run.signal('SIGTERM');
    const status = await run.waitForExit(STOP_TIMEOUT_MS);
    expect(status, run.tail()).toEqual({ code: 0, signal: null });
    await expectNothingLeft(run, tree, 2);
  });

  it('stops what it started, with exit code 1, when a conductor fails during start-up', async () => {
    const failing = startStack(1, { BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES: 'no-such-hardware' });
    await failing.waitForOutput(/conductor-1 exited during start-up/, START_TIMEOUT_MS);
    const tree = descendants(failing.pid);
    const status = await failing.waitForExit(STOP_TIMEOUT_MS);
    expect(status, failing.tail()).toEqual({ code: 1, signal: null });
    await expectNothingLeft(failing, tree, 1);
  });

  it('refuses in one line, starting nothing, when the API port is taken by another program', async () => {
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(apiPort, '127.0.0.1', resolve));
    try {
      const refused = startStack(3);
      const status = await refused.waitForExit(20_000);
      expect(status.code).toBe(1);
      expect(refused.output.trim()).toBe(
        `Cannot start the stack: 127.0.0.1:${apiPort} (the API) is already in use by another program: stop it, or choose another port with --api-port`,
      );
      expect(await portIsFree(databasePort)).toBe(true);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
