// image_download_source local through the runner: the conductor's cache downloads, checks and converts
// the image, the agent is given the conductor's own URL, and a hostile image never reaches the agent.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentDouble } from '@bmaas/agent-client/testing';
import type { NodeRecord } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskManager } from '../task-manager.js';
import { fixtureRunner, fixtureTasks, testConfig } from '../testing/fixtures.js';
import type { ProvisioningRunner } from './runner.js';

const TOKEN = 'l'.repeat(43);
const HTTP_URL = 'http://192.0.2.9:8080';
const WRITE_IMAGE = { interface: 'deploy', step: 'write_image', priority: 80, args: {} };
const MIB = 1024 * 1024;

let work: string;
let database: TestDatabase;
let stores: Stores;
let agent: AgentDouble;
let server: Server;
let imageBase: string;
let tasks: TaskManager;
let runner: ProvisioningRunner;
const served: string[] = [];

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const www = (name: string) => join(work, 'www', name);
const agentImage = (uuid: string) => join(work, 'httpboot', 'agent_images', uuid);

async function act(node: NodeRecord, event: string): Promise<NodeRecord> {
  await runner.doProvisioningAction(node.uuid, event, {});
  expect(await tasks.drain(30_000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}
async function heartbeat(node: NodeRecord): Promise<NodeRecord> {
  const current = (await stores.nodes.getById(node.id)) as NodeRecord;
  await stores.nodes.update(node.id, {
    driverInternalInfo: { ...current.driverInternalInfo, agent_secret_token: TOKEN },
  });
  await runner.heartbeat(node.uuid, { callbackUrl: agent.url, agentVersion: '10.1.0', agentToken: TOKEN });
  expect(await tasks.drain(30_000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}
function localImage(name: string, diskFormat: string): Record<string, string> {
  return {
    image_source: `${imageBase}/${name}`,
    image_os_hash_algo: 'sha256',
    image_os_hash_value: sha256(www(name)),
    image_disk_format: diskFormat,
    image_download_source: 'local',
  };
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'local-images-'));
  mkdirSync(www(''), { recursive: true });
  // a partitioned raw disk, its qcow2, and a qcow2 whose backing file is a file of this host
  execFileSync('qemu-img', ['create', '-f', 'raw', www('disk.img'), '4M'], { stdio: 'ignore' });
  execFileSync('sfdisk', ['-q', www('disk.img')], { input: 'start=2048, type=83, bootable\n' });
  execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', www('disk.img'), www('disk.qcow2')]);
  execFileSync('qemu-img', ['create', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', www('hostile.qcow2'), '4M'], {
    stdio: 'ignore',
  });
  server = createServer((req, res) => {
    served.push(String(req.url));
    const file = www(String(req.url).slice(1));
    if (existsSync(file)) res.end(readFileSync(file));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  agent = await AgentDouble.start(TOKEN);
  agent.behaviours.set('deploy.get_deploy_steps', {
    kind: 'sync',
    result: { deploy_steps: { Generic: [WRITE_IMAGE] }, hardware_manager_version: { generic: '1' } },
  });
  agent.behaviours.set('deploy.execute_deploy_step', { kind: 'async' });
  agent.behaviours.set('standby.get_partition_uuids', { kind: 'sync', result: { 'root uuid': '0x1' } });
  agent.behaviours.set('standby.power_off', { kind: 'sync' });
  database = await createTestDatabase();
  stores = createStores(database.db);
  const config = testConfig({
    DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] },
    deploy: { http_root: join(work, 'httpboot'), http_url: HTTP_URL },
    agent: {
      command_timeout: 5,
      post_deploy_get_power_state_retries: 1,
      post_deploy_get_power_state_retry_interval: 0.01,
    },
  });
  ({ tasks } = fixtureTasks(stores, config));
  runner = fixtureRunner(stores, tasks);
});
afterAll(async () => {
  await agent?.stop();
  await database?.drop();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

describe('image_download_source local', () => {
  it("serves a qcow2 converted to raw from the conductor's file server; active once the agent reports that raw", async () => {
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: localImage('disk.qcow2', 'qcow2') },
      { provisionState: 'available' },
    );
    await act(node, 'deploy');
    const writing = await heartbeat(node);
    expect(writing).toMatchObject({ provisionState: 'wait call-back', deployStep: WRITE_IMAGE });
    const raw = sha256(www('disk.img'));
    const sent = agent.received.find((r) => r.name === 'deploy.execute_deploy_step');
    expect(sent?.params.step).toMatchObject({
      args: {
        image_info: {
          id: 'disk.qcow2',
          urls: [`${HTTP_URL}/agent_images/${node.uuid}`],
          disk_format: 'raw',
          os_hash_algo: 'sha256',
          os_hash_value: raw,
        },
      },
    });
    // the file the agent downloads is the raw disk, whole
    expect(sha256(agentImage(node.uuid))).toBe(raw);
    expect(served.filter((url) => url === '/disk.qcow2')).toHaveLength(1);
    expect(writing.driverInternalInfo.agent_image_asked).toEqual({
      id: 'disk.qcow2',
      diskFormat: 'raw',
      osHashAlgo: 'sha256',
      osHashValue: raw,
      virtualSize: 4 * MIB,
    });

    const image = { source_format: 'raw', written_format: 'raw', os_hash_algo: 'sha256', os_hash_value: raw };
    agent.finish('execute_deploy_step', 'SUCCEEDED', {
      deploy_step: WRITE_IMAGE,
      deploy_result: { image: { ...image, size: 4 * MIB } },
    });
    const active = await heartbeat(node);
    expect(active).toMatchObject({ provisionState: 'active', lastError: null });
    expect(active.driverInternalInfo.agent_image_asked).toBeUndefined();
    expect(existsSync(agentImage(node.uuid))).toBe(false);
  });

  it('fails the deploy when the agent wrote fewer bytes than the image stands for', async () => {
    agent.reset();
    agent.behaviours.set('deploy.get_deploy_steps', {
      kind: 'sync',
      result: { deploy_steps: { Generic: [WRITE_IMAGE] }, hardware_manager_version: { generic: '1' } },
    });
    agent.behaviours.set('deploy.execute_deploy_step', { kind: 'async' });
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: localImage('disk.img', 'raw') },
      { provisionState: 'available' },
    );
    await act(node, 'deploy');
    await heartbeat(node);
    const hash = sha256(www('disk.img'));
    agent.finish('execute_deploy_step', 'SUCCEEDED', {
      deploy_step: WRITE_IMAGE,
      deploy_result: {
        image: { source_format: 'raw', written_format: 'raw', size: MIB, os_hash_algo: 'sha256', os_hash_value: hash },
      },
    });
    const failed = await heartbeat(node);
    expect(failed.provisionState).toBe('deploy failed');
    expect(failed.lastError).toMatch(
      /Deploy step deploy.write_image failed: The agent wrote 1048576 bytes, but the image stands for a disk of 4194304 bytes/,
    );
  });

  it('refuses a qcow2 with a backing file before the agent is asked to write anything', async () => {
    agent.reset();
    agent.behaviours.set('deploy.get_deploy_steps', {
      kind: 'sync',
      result: { deploy_steps: { Generic: [WRITE_IMAGE] }, hardware_manager_version: { generic: '1' } },
    });
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: localImage('hostile.qcow2', 'qcow2') },
      { provisionState: 'available' },
    );
    await act(node, 'deploy');
    const failed = await heartbeat(node);
    expect(failed).toMatchObject({ provisionState: 'deploy failed', powerState: 'power off' });
    expect(failed.lastError).toMatch(
      /Deploy step deploy.write_image failed: Image http:\/\/127\.0\.0\.1:\d+\/hostile\.qcow2 is unsafe \(qcow2\): qcow2 image has a backing file\./,
    );
    expect(agent.received.map((r) => r.name)).not.toContain('deploy.execute_deploy_step');
    expect(existsSync(agentImage(node.uuid))).toBe(false);
  });
});
