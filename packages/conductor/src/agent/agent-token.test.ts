import { AgentDouble } from '@bmaas/agent-client/testing';
import { createSilentLogger, InvalidParameterValue, NodeNotFound, type NodeRecord } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRpcHandlers } from '../rpc/handlers.js';
import type { ConductorRpcHandlers, RpcCall } from '../rpc/json-rpc-server.js';
import type { TaskManager } from '../task-manager.js';
import { fixtureRunner, fixtureTasks, testConfig } from '../testing/fixtures.js';
import { AGENT_TOKEN_KEY, agentTokenMatches, MASKED_AGENT_TOKEN, newAgentToken } from './agent-token.js';

let database: TestDatabase;
let stores: Stores;
let tasks: TaskManager;
let rpc: ConductorRpcHandlers;
/** The node's agent, on loopback: a resumed deploy asks it for its steps. */
let agent: AgentDouble;
const IMAGE = {
  image_source: 'http://192.0.2.1/disk.img',
  image_os_hash_algo: 'sha256',
  image_os_hash_value: 'ab'.repeat(32),
};
const call: RpcCall = { requestId: 'req-agent-test', logger: createSilentLogger() };

beforeAll(async () => {
  agent = await AgentDouble.start('');
  agent.behaviours.set('deploy.get_deploy_steps', {
    kind: 'sync',
    result: { deploy_steps: { Generic: [{ interface: 'deploy', step: 'write_image', priority: 0 }] } },
  });
  agent.behaviours.set('deploy.execute_deploy_step', { kind: 'async' });
  database = await createTestDatabase();
  stores = createStores(database.db);
  const config = testConfig({ DEFAULT: { enabled_deploy_interfaces: ['fake', 'direct'] } });
  // Racing lookups wait for each other instead of failing with NodeLocked.
  const fixture = fixtureTasks(stores, config, {
    conductorId: () => undefined,
    lockRetry: { attempts: 50, intervalMs: 10 },
  });
  tasks = fixture.tasks;
  const registry = fixture.registry;
  const runner = fixtureRunner(stores, tasks);
  rpc = createRpcHandlers({ runner, tasks, registry });
});
afterAll(async () => {
  await agent?.stop();
  await database?.drop();
});

async function stored(node: NodeRecord): Promise<NodeRecord> {
  expect(await tasks.drain(30_000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

/** A direct-deploy node parked in wait call-back, as after `deploy`. */
async function waitingNode(): Promise<NodeRecord> {
  agent.reset();
  const node = await createNode(
    stores,
    { deployInterface: 'direct', instanceInfo: IMAGE },
    { provisionState: 'available' },
  );
  await rpc.do_provisioning_action({ node_id: node.uuid, event: 'deploy' }, call);
  expect((await stored(node)).provisionState).toBe('wait call-back');
  return node;
}

describe('agent tokens', () => {
  it('are long, random and compared exactly', () => {
    const token = newAgentToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newAgentToken()).not.toBe(token);
    expect(agentTokenMatches(token, token)).toBe(true);
    expect(agentTokenMatches(token, `${token}x`)).toBe(false);
    expect(agentTokenMatches(token, token.slice(0, -1))).toBe(false);
    expect(agentTokenMatches(token, '')).toBe(false);
    expect(agentTokenMatches(undefined, '')).toBe(false);
    expect(agentTokenMatches('', '')).toBe(false);
  });
});

describe('get_node_with_token', () => {
  it('issues the token once, stores it, and answers "******" afterwards', async () => {
    const node = await waitingNode();
    const first = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    expect(first.uuid).toBe(node.uuid);
    expect(first.agent_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.driver_internal_info[AGENT_TOKEN_KEY]).toBe(MASKED_AGENT_TOKEN);
    expect(first.driver_internal_info.fake_boot).toBe('ramdisk:deploy');
    expect((await stored(node)).driverInternalInfo[AGENT_TOKEN_KEY]).toBe(first.agent_token);

    const again = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    expect(again.agent_token).toBe(MASKED_AGENT_TOKEN);
    expect(again.driver_internal_info[AGENT_TOKEN_KEY]).toBe(MASKED_AGENT_TOKEN);
    const after = await stored(node);
    expect(after.driverInternalInfo[AGENT_TOKEN_KEY]).toBe(first.agent_token);
    expect(after.reservation).toBeNull();
  });

  it('gives the token to exactly one of many racing lookups', async () => {
    const node = await waitingNode();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => rpc.get_node_with_token({ node_id: node.uuid }, call)),
    );
    const issued = answers.map((a) => a.agent_token).filter((token) => token !== MASKED_AGENT_TOKEN);
    expect(issued).toHaveLength(1);
    expect((await stored(node)).driverInternalInfo[AGENT_TOKEN_KEY]).toBe(issued[0]);
  });

  it('refuses an unknown node', async () => {
    await expect(
      rpc.get_node_with_token({ node_id: '00000000-0000-4000-8000-000000000000' }, call),
    ).rejects.toBeInstanceOf(NodeNotFound);
  });
});

describe('heartbeat with an agent token', () => {
  it('refuses a wrong, masked or empty token and leaves the node waiting; the issued one resumes the deploy', async () => {
    const node = await waitingNode();
    const { agent_token: token } = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    for (const wrong of [newAgentToken(), MASKED_AGENT_TOKEN, '', token.toUpperCase()]) {
      const refusal = rpc.heartbeat({ node_id: node.uuid, agent_token: wrong }, call);
      await expect(refusal).rejects.toBeInstanceOf(InvalidParameterValue);
      await expect(refusal).rejects.toThrow('Invalid or missing agent token received.');
    }
    const refused = await stored(node);
    expect(refused).toMatchObject({ provisionState: 'wait call-back', reservation: null });
    expect(refused.driverInternalInfo.agent_url).toBeUndefined();

    agent.token = token;
    await rpc.heartbeat(
      { node_id: node.uuid, agent_token: token, callback_url: agent.url, agent_version: 'e2e' },
      call,
    );
    const writing = await stored(node);
    expect(writing).toMatchObject({ provisionState: 'wait call-back', deployStep: { step: 'write_image' } });
    expect(writing.driverInternalInfo).toMatchObject({ agent_url: agent.url, agent_version: 'e2e' });
    expect(agent.received.map((r) => r.name)).toEqual(['deploy.get_deploy_steps', 'deploy.execute_deploy_step']);
  });

  it('refuses any token before one was issued', async () => {
    const node = await waitingNode();
    await expect(rpc.heartbeat({ node_id: node.uuid, agent_token: 'guess' }, call)).rejects.toBeInstanceOf(
      InvalidParameterValue,
    );
    expect((await stored(node)).provisionState).toBe('wait call-back');
  });

  it('refuses a token that is not a string instead of ignoring it', async () => {
    const node = await waitingNode();
    const params = { node_id: node.uuid, agent_token: 42 } as unknown as { node_id: string; agent_token: string };
    await expect(rpc.heartbeat(params, call)).rejects.toThrow(/agent_token must be a string/);
    expect((await stored(node)).provisionState).toBe('wait call-back');
  });
});

describe("the previous agent's token", () => {
  it('is cleared, with its callback URL, by the next provision action, so the next boot gets a new one', async () => {
    const node = await waitingNode();
    const { agent_token: first } = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    agent.token = first;
    await rpc.heartbeat({ node_id: node.uuid, agent_token: first, callback_url: agent.url }, call);
    expect((await stored(node)).driverInternalInfo.agent_url).toBe(agent.url);
    // as if the image were written and the node active, its agent still recorded
    await stores.nodes.update(node.id, { provisionState: 'active', targetProvisionState: null });

    await rpc.do_provisioning_action({ node_id: node.uuid, event: 'rebuild' }, call);
    const rebuilding = await stored(node);
    expect(rebuilding.provisionState).toBe('wait call-back');
    expect(rebuilding.driverInternalInfo[AGENT_TOKEN_KEY]).toBeUndefined();
    expect(rebuilding.driverInternalInfo.agent_url).toBeUndefined();
    await expect(rpc.heartbeat({ node_id: node.uuid, agent_token: first }, call)).rejects.toBeInstanceOf(
      InvalidParameterValue,
    );
    const { agent_token: second } = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    expect(second).not.toBe(MASKED_AGENT_TOKEN);
    expect(second).not.toBe(first);
  });

  it('is cleared by a power off or reboot, not by a power on', async () => {
    const node = await waitingNode();
    const { agent_token: token } = await rpc.get_node_with_token({ node_id: node.uuid }, call);
    await rpc.change_node_power_state({ node_id: node.uuid, new_state: 'power on' }, call);
    expect((await stored(node)).driverInternalInfo[AGENT_TOKEN_KEY]).toBe(token);
    await rpc.change_node_power_state({ node_id: node.uuid, new_state: 'rebooting' }, call);
    expect((await stored(node)).driverInternalInfo[AGENT_TOKEN_KEY]).toBeUndefined();
  });
});
