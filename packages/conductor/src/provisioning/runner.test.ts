import {
  createSilentLogger,
  InvalidParameterValue,
  InvalidStateRequested,
  MissingParameterValue,
  type NodeRecord,
} from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import {
  FakeDeployInterface,
  FakePowerInterface,
  fakeBootInterface,
  fakeDeployInterface,
  fakeInspectInterface,
  fakeManagementInterface,
  fakePowerInterface,
  noInspectInterface,
  type Task,
} from '@bmaas/driver-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directDeployInterface } from '../deploy/direct-deploy.js';
import { agentInspectInterface } from '../inspection/agent-inspect.js';
import { InventoryProcessor } from '../inspection/inventory-processor.js';
import type { DriverCatalog } from '../registry/catalog.js';
import { DriverRegistry } from '../registry/driver-registry.js';
import { TaskManager } from '../task-manager.js';
import { createNode, testConfig } from '../test-fixtures.js';
import { ProvisioningRunner } from './runner.js';

/** Fixture interfaces that fail, as a broken plug-in would. */
class UnreachablePower extends FakePowerInterface {
  override async validate(_task: Task): Promise<void> {
    throw new InvalidParameterValue('power address is missing');
  }
}
class ExplodingDeploy extends FakeDeployInterface {
  override async deploy(_task: Task): Promise<'done'> {
    throw new Error('disk on fire');
  }
}

const CATALOG: DriverCatalog = {
  interfaces: {
    boot: [fakeBootInterface],
    deploy: [fakeDeployInterface, directDeployInterface, { name: 'exploding', create: () => new ExplodingDeploy() }],
    power: [fakePowerInterface, { name: 'unreachable', create: () => new UnreachablePower() }],
    management: [fakeManagementInterface],
    inspect: [fakeInspectInterface, noInspectInterface, agentInspectInterface],
  },
  hardwareTypes: [
    {
      name: 'fake-hardware',
      supported: {
        boot: ['fake'],
        deploy: ['fake', 'direct', 'exploding'],
        power: ['fake', 'unreachable'],
        management: ['fake'],
        inspect: ['fake', 'no-inspect', 'agent'],
      },
    },
  ],
};
const CONDUCTOR_ID = 7;

let database: TestDatabase;
let stores: Stores;

function setUp(automatedClean: boolean): { runner: ProvisioningRunner; tasks: TaskManager } {
  const config = testConfig({
    DEFAULT: {
      enabled_deploy_interfaces: ['fake', 'direct', 'exploding'],
      enabled_power_interfaces: ['fake', 'unreachable'],
    },
  });
  const registry = DriverRegistry.create(CATALOG, { config, logger: createSilentLogger(), conductorHostname: 'c1' });
  const tasks = new TaskManager({
    nodes: stores.nodes,
    ports: stores.ports,
    driverFor: (node) => registry.driverFor(node),
    hostname: 'c1',
    conductorId: () => CONDUCTOR_ID,
    lockRetry: { attempts: 1, intervalMs: 10 },
    logger: createSilentLogger(),
  });
  const inventories = new InventoryProcessor({ ...stores, config: config.inspector });
  return { runner: new ProvisioningRunner({ tasks, inventories, automatedClean }), tasks };
}

let plain: ReturnType<typeof setUp>;
let cleaning: ReturnType<typeof setUp>;

/** Fires an action, waits for its background work, returns the node as stored. */
async function act(
  on: ReturnType<typeof setUp>,
  node: NodeRecord,
  event: string,
  request: Parameters<ProvisioningRunner['doProvisioningAction']>[2] = {},
): Promise<NodeRecord> {
  await on.runner.doProvisioningAction(node.uuid, event, request);
  expect(await on.tasks.drain(5000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

async function heartbeat(on: ReturnType<typeof setUp>, node: NodeRecord): Promise<NodeRecord> {
  await on.runner.heartbeat(node.uuid, { callbackUrl: 'http://192.0.2.7:9999', agentVersion: '10.1.0' });
  expect(await on.tasks.drain(5000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  plain = setUp(false);
  cleaning = setUp(true);
});
afterAll(async () => {
  await database?.drop();
});

describe('ProvisioningRunner with the fake interfaces', () => {
  it('walks enroll -> manageable -> available -> active -> available', async () => {
    const node = await createNode(stores);
    const managed = await act(plain, node, 'manage');
    expect(managed).toMatchObject({
      provisionState: 'manageable',
      targetProvisionState: null,
      powerState: 'power off',
    });
    expect(managed.provisionUpdatedAt).toBeInstanceOf(Date);
    expect((await act(plain, node, 'provide')).provisionState).toBe('available');
    expect(await act(plain, node, 'deploy')).toMatchObject({ provisionState: 'active', reservation: null });
    expect(await act(plain, node, 'delete')).toMatchObject({ provisionState: 'available', targetProvisionState: null });
  });

  it("refuses an event the state does not allow, with Ironic's message, and changes nothing", async () => {
    const node = await createNode(stores);
    const error = await plain.runner.doProvisioningAction(node.uuid, 'deploy').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidStateRequested);
    expect((error as Error).message).toBe(
      `The requested action "deploy" can not be performed on node "${node.uuid}" while it is in state "enroll".`,
    );
    expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'enroll', reservation: null });
    await expect(plain.runner.doProvisioningAction(node.uuid, 'explode')).rejects.toBeInstanceOf(InvalidParameterValue);
  });

  it('blocks deploy in maintenance', async () => {
    const node = await createNode(stores, { maintenance: true }, { provisionState: 'available' });
    await expect(plain.runner.doProvisioningAction(node.uuid, 'deploy')).rejects.toThrow(
      /while it is in maintenance mode/,
    );
  });

  it('needs clean_steps for a manual clean and rescue_password for a rescue', async () => {
    const node = await createNode(stores, {}, { provisionState: 'manageable' });
    await expect(plain.runner.doProvisioningAction(node.uuid, 'clean')).rejects.toBeInstanceOf(MissingParameterValue);
    const active = await createNode(stores, {}, { provisionState: 'active' });
    await expect(plain.runner.doProvisioningAction(active.uuid, 'rescue')).rejects.toBeInstanceOf(
      MissingParameterValue,
    );
  });

  it('rescues and unrescues at once without an agent', async () => {
    const node = await createNode(stores, {}, { provisionState: 'active' });
    expect(await act(plain, node, 'rescue', { rescuePassword: 'pw' })).toMatchObject({
      provisionState: 'rescue',
      instanceInfo: { rescue_password: 'pw' },
    });
    expect(await act(plain, node, 'unrescue')).toMatchObject({ provisionState: 'active', instanceInfo: {} });
  });

  it('inspects and adopts at once', async () => {
    const node = await createNode(stores, {}, { provisionState: 'manageable' });
    expect((await act(plain, node, 'inspect')).provisionState).toBe('manageable');
    expect((await act(plain, node, 'adopt')).provisionState).toBe('active');
  });

  it('ends a failed verification back in enroll with last_error', async () => {
    const node = await createNode(stores, { powerInterface: 'unreachable' });
    expect(await act(plain, node, 'manage')).toMatchObject({
      provisionState: 'enroll',
      targetProvisionState: null,
      lastError: `Failed to verify node ${node.uuid}: power address is missing`,
      reservation: null,
    });
  });

  it('ends a failed deployment in deploy failed, from which it may deploy again', async () => {
    const node = await createNode(stores, { deployInterface: 'exploding' }, { provisionState: 'available' });
    expect(await act(plain, node, 'deploy')).toMatchObject({
      provisionState: 'deploy failed',
      lastError: `Failed to deploy node ${node.uuid}: disk on fire`,
    });
    await stores.nodes.update(node.id, { deployInterface: 'fake' });
    expect(await act(plain, node, 'deploy')).toMatchObject({ provisionState: 'active', lastError: null });
  });

  it('changes the power state in the background', async () => {
    const node = await createNode(stores);
    await plain.runner.changePowerState(node.uuid, 'power on');
    expect(await plain.tasks.drain(5000)).toBe(true);
    expect(await stores.nodes.getById(node.id)).toMatchObject({ powerState: 'power on', targetPowerState: null });
    await expect(plain.runner.changePowerState(node.uuid, 'sideways')).rejects.toBeInstanceOf(InvalidParameterValue);
  });
});

describe('ProvisioningRunner with the direct deploy interface', () => {
  it('deploys through wait call-back and the agent heartbeat', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'available' });
    const waiting = await act(plain, node, 'deploy');
    expect(waiting).toMatchObject({
      provisionState: 'wait call-back',
      targetProvisionState: 'active',
      powerState: 'power on',
      conductorAffinity: CONDUCTOR_ID,
      reservation: null,
      driverInternalInfo: { fake_boot: 'ramdisk:deploy', fake_boot_device: { device: 'pxe', persistent: false } },
    });
    const active = await heartbeat(plain, node);
    expect(active).toMatchObject({
      provisionState: 'active',
      targetProvisionState: null,
      powerState: 'power on',
      driverInternalInfo: {
        fake_boot: 'instance',
        fake_boot_device: { device: 'disk', persistent: true },
        agent_url: 'http://192.0.2.7:9999',
        agent_version: '10.1.0',
      },
    });
    await expect(plain.runner.heartbeat(node.uuid)).rejects.toThrow(/is not waiting for its agent/);
  });

  it('cleans on provide and undeploy, waiting in clean wait for the agent', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    expect(await act(cleaning, node, 'provide')).toMatchObject({
      provisionState: 'clean wait',
      targetProvisionState: 'available',
    });
    const available = await heartbeat(cleaning, node);
    expect(available).toMatchObject({ provisionState: 'available', powerState: 'power off' });
    expect(available.driverInternalInfo.fake_boot).toBeUndefined();

    await act(cleaning, node, 'deploy');
    await heartbeat(cleaning, node);
    expect(await act(cleaning, node, 'delete')).toMatchObject({
      provisionState: 'clean wait',
      targetProvisionState: 'available',
      instanceInfo: {},
    });
    expect((await heartbeat(cleaning, node)).provisionState).toBe('available');
  });

  it("obeys the node's own automated_clean over the option", async () => {
    const node = await createNode(
      stores,
      { deployInterface: 'direct', automatedClean: false },
      { provisionState: 'manageable' },
    );
    expect((await act(cleaning, node, 'provide')).provisionState).toBe('available');
  });

  it('returns a manual clean to manageable', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    const steps = [{ interface: 'deploy', step: 'erase_devices' }];
    expect(await act(plain, node, 'clean', { cleanSteps: steps })).toMatchObject({
      provisionState: 'clean wait',
      targetProvisionState: 'manageable',
      driverInternalInfo: { clean_steps: steps },
    });
    const done = await heartbeat(plain, node);
    expect(done).toMatchObject({ provisionState: 'manageable', targetProvisionState: null });
    expect(done.driverInternalInfo.clean_steps).toBeUndefined();
  });

  it('aborts a clean wait into clean failed and removes the ramdisk boot', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    await act(cleaning, node, 'provide');
    const aborted = await act(cleaning, node, 'abort');
    expect(aborted).toMatchObject({
      provisionState: 'clean failed',
      targetProvisionState: null,
      lastError: 'By request, the clean operation was aborted.',
    });
    expect(aborted.driverInternalInfo.fake_boot).toBeUndefined();
  });

  it('rescues through rescue wait and unrescues back to the instance', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'active' });
    expect(await act(plain, node, 'rescue', { rescuePassword: 'pw' })).toMatchObject({
      provisionState: 'rescue wait',
      driverInternalInfo: { fake_boot: 'ramdisk:rescue' },
    });
    expect((await heartbeat(plain, node)).provisionState).toBe('rescue');
    expect(await act(plain, node, 'unrescue')).toMatchObject({
      provisionState: 'active',
      instanceInfo: {},
      driverInternalInfo: { fake_boot: 'instance' },
    });
  });

  it('fails a wait that outlived its timeout, and only then', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'available' });
    await act(plain, node, 'deploy');
    expect(await plain.runner.failTimedOutWait(node.uuid, () => 1800)).toBe(false);
    await stores.nodes.update(node.id, { provisionUpdatedAt: new Date(Date.now() - 3600_000) });
    expect(await plain.runner.failTimedOutWait(node.uuid, () => 1800)).toBe(true);
    const failed = (await stores.nodes.getById(node.id)) as NodeRecord;
    expect(failed).toMatchObject({ provisionState: 'deploy failed', powerState: 'power off', reservation: null });
    expect(failed.lastError).toMatch(/^Timeout reached while waiting for callback for node/);
    expect(failed.driverInternalInfo.fake_boot).toBeUndefined();
  });
});
