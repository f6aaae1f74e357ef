import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import {
  ensureInstallCredentials,
  freePort,
  INSTALL_JSON_RPC_USER,
  type PrometheusSample,
  parsePrometheusText,
  sampleSum,
  waitFor,
} from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { startTestServices } from '../support/test-services.js';

/**
 * `/metrics` of the real processes: the API and a conductor (JSON-RPC with
 * HTTP basic auth, as `npm start` runs it) on one test database. A boot
 * request served and one refused, then provisioning actions; each scrape
 * must show the figures moved.
 */

const MAC = '52:54:00:cd:00:01';

let database: TestDatabase;
let stack: Services;
let rest: ApiClient;
let workDir: string;
let rpcPassword: string;
let httpUrl: string;

async function scrape(url: string, authorization?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    headers: authorization ? { authorization } : {},
    signal: AbortSignal.timeout(15_000),
  });
  return { status: response.status, text: await response.text() };
}

async function apiSamples(): Promise<PrometheusSample[]> {
  const answer = await scrape(`${stack.apiUrl}/metrics`);
  expect(answer.status).toBe(200);
  return parsePrometheusText(answer.text);
}

function conductorMetricsUrl(): string {
  return `http://127.0.0.1:${stack.conductors[0]?.port}/metrics`;
}

async function conductorSamples(): Promise<PrometheusSample[]> {
  const basic = `Basic ${Buffer.from(`${INSTALL_JSON_RPC_USER}:${rpcPassword}`).toString('base64')}`;
  const answer = await scrape(conductorMetricsUrl(), basic);
  expect(answer.status).toBe(200);
  return parsePrometheusText(answer.text);
}

beforeAll(async () => {
  database = await createTestDatabase();
  workDir = await mkdtemp(join(tmpdir(), 'bmaas-metrics-'));
  const credentials = ensureInstallCredentials(join(workDir, 'credentials'));
  const conf = await readFile(credentials.configFile, 'utf8');
  rpcPassword = /^password = (.+)$/m.exec(conf)?.[1] as string;
  await writeFile(join(workDir, 'deploy_kernel'), 'kernel\n');
  await writeFile(join(workDir, 'deploy_ramdisk'), 'ramdisk\n');
  const apiPort = await freePort();
  httpUrl = `http://127.0.0.1:${await freePort()}`;
  stack = await startTestServices({
    databaseUrl: database.url,
    conductors: 1,
    api: true,
    apiPort,
    startTimeoutMs: 60_000,
    env: {
      BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
      BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
      BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
      BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
      BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
      BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: '127.0.0.1',
      BMAAS_DEPLOY__HTTP_ROOT: await mkdtemp(join(workDir, 'http-root-')),
      BMAAS_DEPLOY__HTTP_URL: httpUrl,
      BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
      BMAAS_API__PUBLIC_ENDPOINT: `http://127.0.0.1:${apiPort}`,
      BMAAS_JSON_RPC__AUTH_STRATEGY: 'http_basic',
      BMAAS_JSON_RPC__HTTP_BASIC_AUTH_USER_FILE: join(credentials.directory, 'json-rpc-htpasswd'),
      BMAAS_JSON_RPC__USERNAME: INSTALL_JSON_RPC_USER,
      BMAAS_JSON_RPC__PASSWORD: rpcPassword,
    },
  });
  rest = new ApiClient(stack.apiUrl as string);
});

afterAll(async () => {
  await stack?.stop();
  await database?.drop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('/metrics of the API and a conductor', () => {
  it('keeps the conductor metrics behind the JSON-RPC credentials, and off the public file server', async () => {
    expect((await scrape(conductorMetricsUrl())).status).toBe(401);
    const wrong = `Basic ${Buffer.from(`${INSTALL_JSON_RPC_USER}:wrong`).toString('base64')}`;
    expect((await scrape(conductorMetricsUrl(), wrong)).status).toBe(401);
    const samples = await conductorSamples();
    expect(sampleSum(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    const fileServer = await scrape(`${httpUrl}/metrics`);
    expect(fileServer.status).toBe(404);
    expect(fileServer.text).not.toContain('bmaas_');
  });

  it('moves the boot, RPC, REST, node, deploy, clean and power figures of both processes', async () => {
    const apiBefore = await apiSamples();
    const conductorBefore = await conductorSamples();

    // A node booting through the boot configuration API, left in "wait call-back".
    const booting = await rest.createNode({
      driver: 'fake-hardware',
      name: 'metrics-booting',
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      power_interface: 'fake',
      management_interface: 'fake',
      driver_info: { deploy_kernel: join(workDir, 'deploy_kernel'), deploy_ramdisk: join(workDir, 'deploy_ramdisk') },
      instance_info: UNFETCHED_INSTANCE_INFO,
    });
    await rest.createPort(booting.uuid, MAC);
    await rest.deployToWaitCallBack(booting.uuid);
    const served = await fetch(`${stack.apiUrl}/v1/boot/${MAC.replaceAll(':', '-')}/boot.ipxe`);
    expect(served.status).toBe(200);
    expect(await served.text()).toContain(booting.uuid);
    const refused = await fetch(`${stack.apiUrl}/v1/boot/52-54-00-cd-ff-ff/boot.ipxe`);
    expect(refused.status).toBe(404);
    await refused.text();

    // A fake-deploy node cleaned on provide, then deployed to active.
    const deployed = await rest.createNode({
      driver: 'fake-hardware',
      name: 'metrics-deployed',
      deploy_interface: 'fake',
      automated_clean: true,
    });
    for (const [target, state] of [
      ['manage', 'manageable'],
      ['provide', 'available'],
      ['active', 'active'],
    ] as const) {
      expect((await rest.provision(deployed.uuid, target)).status).toBe(202);
      await rest.settled(deployed.uuid, state);
    }

    // A power change through the conductor's power interface.
    expect((await rest.power(deployed.uuid, 'power on')).status).toBe(202);
    await waitFor(
      `node ${deployed.uuid} to be powered on`,
      async () => {
        const node = await rest.node(deployed.uuid);
        return node.power_state === 'power on' && node.reservation === null ? node : undefined;
      },
      { timeoutMs: 15_000 },
    );

    const api = await apiSamples();
    const conductor = await conductorSamples();
    const moved = (after: PrometheusSample[], before: PrometheusSample[], name: string, labels = {}) =>
      sampleSum(after, name, labels) - sampleSum(before, name, labels);

    const boot = 'bmaas_boot_config_requests_total';
    expect(moved(api, apiBefore, boot, { outcome: 'served', name: 'boot.ipxe' })).toBe(1);
    expect(moved(api, apiBefore, boot, { outcome: 'unknown-mac', name: 'boot.ipxe' })).toBe(1);
    expect(moved(api, apiBefore, 'bmaas_boot_config_request_duration_seconds_count')).toBe(2);
    const clientCalls = 'bmaas_rpc_client_call_duration_seconds_count';
    expect(moved(api, apiBefore, clientCalls, { method: 'get_boot_config', outcome: 'ok' })).toBe(1);
    // manage, provide, active for each node.
    expect(moved(api, apiBefore, clientCalls, { method: 'do_provisioning_action', outcome: 'ok' })).toBe(6);
    const rest202 = { method: 'PUT', route: '/v1/nodes/:ident/states/provision', status_code: '202' };
    expect(moved(api, apiBefore, 'bmaas_http_request_duration_seconds_count', rest202)).toBe(6);
    expect(sampleSum(api, 'bmaas_nodes', { provision_state: 'wait call-back' })).toBe(1);
    expect(sampleSum(api, 'bmaas_nodes', { provision_state: 'active' })).toBe(1);
    const hostname = stack.conductors[0]?.hostname as string;
    expect(sampleSum(api, 'bmaas_nodes', { provision_state: 'wait call-back', conductor: hostname })).toBe(1);

    const serverCalls = 'bmaas_rpc_server_call_duration_seconds_count';
    expect(moved(conductor, conductorBefore, serverCalls, { method: 'get_boot_config', outcome: 'ok' })).toBe(1);
    expect(moved(conductor, conductorBefore, serverCalls, { method: 'do_provisioning_action', outcome: 'ok' })).toBe(6);
    // Both nodes were provided: each passed through cleaning (skipped when automated cleaning is off).
    expect(moved(conductor, conductorBefore, 'bmaas_clean_duration_seconds_count', { result: 'success' })).toBe(2);
    // The booting node's deploy is still under way (wait call-back).
    expect(moved(conductor, conductorBefore, 'bmaas_deploy_duration_seconds_count', { result: 'success' })).toBe(1);
    expect(moved(conductor, conductorBefore, 'bmaas_deploy_duration_seconds_count')).toBe(1);
    const power = { interface: 'fake', target: 'power on' };
    expect(moved(conductor, conductorBefore, 'bmaas_power_actions_total', power)).toBeGreaterThanOrEqual(1);
    expect(moved(conductor, conductorBefore, 'bmaas_power_action_failures_total')).toBe(0);
    expect(sampleSum(conductor, 'bmaas_conductor_heartbeats_total')).toBeGreaterThan(0);
    expect(sampleSum(conductor, 'bmaas_conductor_heartbeat_failures_total')).toBe(0);

    const { text } = await scrape(`${stack.apiUrl}/metrics`);
    expect(text).not.toContain(booting.uuid);
    expect(text).not.toContain(MAC);
  });
});
