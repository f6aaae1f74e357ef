import { gunzipSync } from 'node:zlib';
import { AgentDouble } from '@bmaas/agent-client/testing';
import { InvalidParameterValue, InvalidStateRequested, MissingParameterValue, type NodeRecord } from '@bmaas/common';
import { createStores, type NodeChanges, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { directDeployInterface } from '@bmaas/direct-deploy-interface';
import {
  FakeBootInterface,
  FakeDeployInterface,
  FakePowerInterface,
  fakeBootInterface,
  fakeDeployInterface,
  fakeInspectInterface,
  fakeManagementInterface,
  fakePowerInterface,
  noInspectInterface,
  type ProvisionStep,
  type RamdiskMode,
  type Task,
} from '@bmaas/driver-api';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { agentInspectInterface } from '../inspection/agent-inspect.js';
import { InventoryProcessor } from '../inspection/inventory-processor.js';
import type { DriverCatalog } from '../registry/catalog.js';
import type { TaskManager } from '../task-manager.js';
import { fixtureTasks, testConfig } from '../testing/fixtures.js';
import { ProvisioningRunner } from './runner.js';

/** Fixture interfaces that fail, as a broken plug-in would. */
class UnreachablePower extends FakePowerInterface {
  override async validate(_task: Task): Promise<void> {
    throw new InvalidParameterValue('power address is missing');
  }
}
class ExplodingDeploy extends FakeDeployInterface {
  override async executeDeployStep(): Promise<'done'> {
    throw new Error('disk on fire');
  }
}
class StepLessDeploy extends FakeDeployInterface {
  override async getDeploySteps(): Promise<ProvisionStep[]> {
    throw new Error('no steps today');
  }
}

/** Boots through the BMC (as a virtual CD would): it sets the boot device itself (the fake management has disk and pxe). */
class BmcBoot extends FakeBootInterface {
  readonly setsBootDevice = true;
  override async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    await super.prepareRamdisk(task, mode);
    await task.driver.management.setBootDevice(task, 'disk', false);
  }
}

const CATALOG: DriverCatalog = {
  interfaces: {
    boot: [fakeBootInterface, { ...fakeBootInterface, name: 'bmc-boot', create: () => new BmcBoot() }],
    deploy: [
      fakeDeployInterface,
      directDeployInterface,
      { name: 'exploding', create: () => new ExplodingDeploy() },
      { name: 'stepless', create: () => new StepLessDeploy() },
    ],
    power: [fakePowerInterface, { name: 'unreachable', create: () => new UnreachablePower() }],
    management: [fakeManagementInterface],
    inspect: [fakeInspectInterface, noInspectInterface, agentInspectInterface],
  },
  hardwareTypes: [
    {
      name: 'fake-hardware',
      supported: {
        boot: ['fake', 'bmc-boot'],
        deploy: ['fake', 'direct', 'exploding', 'stepless'],
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
      enabled_boot_interfaces: ['fake', 'bmc-boot'],
      enabled_deploy_interfaces: ['fake', 'direct', 'exploding', 'stepless'],
      enabled_power_interfaces: ['fake', 'unreachable'],
    },
    agent: {
      command_timeout: 5,
      post_deploy_get_power_state_retries: 1,
      post_deploy_get_power_state_retry_interval: 0.01,
    },
  });
  const { tasks } = fixtureTasks(stores, config, { catalog: CATALOG, conductorId: () => CONDUCTOR_ID });
  const inventories = new InventoryProcessor({ ...stores, config: config.inspector });
  return {
    runner: new ProvisioningRunner({ tasks, inventories, automatedClean, hardwareCache: stores.hardwareSettings }),
    tasks,
  };
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
  expect(await on.tasks.drain(30_000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

/** The node's agent heartbeats (from the double's URL, with the token it got at lookup). */
async function heartbeat(on: ReturnType<typeof setUp>, node: NodeRecord): Promise<NodeRecord> {
  await stores.nodes.update(node.id, {
    driverInternalInfo: {
      ...((await stores.nodes.getById(node.id)) as NodeRecord).driverInternalInfo,
      agent_secret_token: TOKEN,
    },
  });
  await on.runner.heartbeat(node.uuid, { callbackUrl: agent.url, agentVersion: '10.1.0', agentToken: TOKEN });
  expect(await on.tasks.drain(30_000)).toBe(true);
  return (await stores.nodes.getById(node.id)) as NodeRecord;
}

const TOKEN = 't'.repeat(43);
let agent: AgentDouble;
const WRITE_IMAGE = { interface: 'deploy', step: 'write_image', priority: 80, args: {} };
const IMAGE = {
  image_source: 'http://192.0.2.1/images/disk.img',
  image_os_hash_algo: 'sha256',
  image_os_hash_value: 'a'.repeat(64),
};

/** The agent as IPA answers: its steps, write_image and erase running until finished, the rest at once. */
function agentLikeIpa(): void {
  agent.reset();
  agent.behaviours.set('deploy.get_deploy_steps', {
    kind: 'sync',
    result: { deploy_steps: { GenericHardwareManager: [WRITE_IMAGE] }, hardware_manager_version: { generic: '1' } },
  });
  agent.behaviours.set('deploy.execute_deploy_step', { kind: 'async' });
  agent.behaviours.set('standby.get_partition_uuids', { kind: 'sync', result: { 'root uuid': '0x1234abcd' } });
  agent.behaviours.set('standby.power_off', { kind: 'sync' });
  agent.behaviours.set('clean.get_clean_steps', {
    kind: 'sync',
    result: {
      clean_steps: {
        GenericHardwareManager: [
          { interface: 'deploy', step: 'erase_devices_metadata', priority: 99 },
          { interface: 'deploy', step: 'erase_devices', priority: 10 },
        ],
      },
      hardware_manager_version: { generic: '1' },
    },
  });
  agent.behaviours.set('clean.execute_clean_step', { kind: 'async' });
  agent.behaviours.set('rescue.finalize_rescue', { kind: 'sync' });
}

/** A direct node deploying with an IPA-like agent, in wait call-back while the agent writes its image. */
async function nodeWritingItsImage(): Promise<NodeRecord> {
  agentLikeIpa();
  const node = await createNode(
    stores,
    { deployInterface: 'direct', instanceInfo: IMAGE },
    { provisionState: 'available' },
  );
  await act(plain, node, 'deploy');
  await heartbeat(plain, node);
  return node;
}

beforeAll(async () => {
  agent = await AgentDouble.start(TOKEN);
  database = await createTestDatabase();
  stores = createStores(database.db);
  plain = setUp(false);
  cleaning = setUp(true);
});
afterAll(async () => {
  await agent?.stop();
  await database?.drop();
});

describe('ProvisioningRunner with the fake interfaces', () => {
  it('walks enroll -> manageable -> available -> active -> available', async () => {
    const node = await createNode(stores);
    const managed = await act(plain, node, 'manage');
    expect(managed).toMatchObject({
      provisionState: 'manageable',
      targetProvisionState: null,
      // Ironic's fake power reports what was last set: nothing yet.
      powerState: null,
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

  it('takes the lock, moves the node into deploying and records its first deploy step in one statement', async () => {
    const node = await createNode(stores, {}, { provisionState: 'available' });
    const writes: NodeChanges[] = [];
    const write = stores.nodeLocks.updateReservedBy.bind(stores.nodeLocks);
    const writeTakingLock = stores.nodeLocks.updateIfUnreservedVersion.bind(stores.nodeLocks);
    const spies = [
      vi.spyOn(stores.nodeLocks, 'updateReservedBy').mockImplementation(async (id, host, changes) => {
        if (id === node.id) writes.push(changes);
        return write(id, host, changes);
      }),
      vi.spyOn(stores.nodeLocks, 'updateIfUnreservedVersion').mockImplementation(async (id, version, host, changes) => {
        if (id === node.id) writes.push({ ...changes, reservation: host });
        return writeTakingLock(id, version, host, changes);
      }),
    ];
    const reserve = vi.spyOn(stores.nodeLocks, 'reserveByUuidWithPorts');
    try {
      expect(await act(plain, node, 'deploy')).toMatchObject({
        provisionState: 'active',
        deployStep: {},
        driverInternalInfo: { fake_deploy_steps: ['deploy.deploy'] },
      });
      expect(reserve).not.toHaveBeenCalled();
    } finally {
      for (const spy of [...spies, reserve]) spy.mockRestore();
    }
    expect(writes[0]).toMatchObject({
      reservation: 'c1',
      provisionState: 'deploying',
      targetProvisionState: 'active',
      deployStep: { interface: 'deploy', step: 'deploy' },
      driverInternalInfo: { deploy_steps: [{ step: 'deploy' }], deploy_step_index: 0 },
    });
    // The step is not recorded again before it runs.
    expect(
      writes.filter((changes) => (changes.deployStep as { step?: string } | undefined)?.step === 'deploy'),
    ).toHaveLength(1);
  });

  it('fails the deploy in the background, as before, when its steps cannot be chosen as it is accepted', async () => {
    const node = await createNode(stores, { deployInterface: 'stepless' }, { provisionState: 'available' });
    expect(await act(plain, node, 'deploy')).toMatchObject({
      provisionState: 'deploy failed',
      lastError: `Failed to deploy node ${node.uuid}: no steps today`,
      reservation: null,
    });
  });

  it('changes the power state in the background', async () => {
    const node = await createNode(stores);
    await plain.runner.changePowerState(node.uuid, 'power on');
    expect(await plain.tasks.drain(30_000)).toBe(true);
    expect(await stores.nodes.getById(node.id)).toMatchObject({ powerState: 'power on', targetPowerState: null });
    await expect(plain.runner.changePowerState(node.uuid, 'sideways')).rejects.toBeInstanceOf(InvalidParameterValue);
  });
});

describe('ProvisioningRunner with the direct deploy interface and an agent', () => {
  it('leaves the boot device to a boot interface that sets it itself', async () => {
    agentLikeIpa();
    const node = await createNode(
      stores,
      { deployInterface: 'direct', bootInterface: 'bmc-boot', instanceInfo: IMAGE },
      { provisionState: 'available' },
    );
    expect(await act(plain, node, 'deploy')).toMatchObject({
      lastError: null,
      provisionState: 'wait call-back',
      powerState: 'power on',
      driverInternalInfo: { fake_boot: 'ramdisk:deploy', fake_boot_device: { device: 'disk', persistent: false } },
    });
  });

  it('deploys through deploy steps: deploying <-> wait call-back, write_image by the agent, then active', async () => {
    agentLikeIpa();
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: IMAGE },
      { provisionState: 'available' },
    );
    const configdrive = { meta_data: { hostname: 'web-1' } };
    const waiting = await act(plain, node, 'deploy', { configdrive });
    expect(waiting.instanceInfo.configdrive).toEqual(configdrive);
    expect(waiting).toMatchObject({
      provisionState: 'wait call-back',
      targetProvisionState: 'active',
      powerState: 'power on',
      deployStep: { interface: 'deploy', step: 'deploy', priority: 100 },
      conductorAffinity: CONDUCTOR_ID,
      reservation: null,
      driverInternalInfo: { fake_boot: 'ramdisk:deploy', fake_boot_device: { device: 'pxe', persistent: false } },
    });
    const writing = await heartbeat(plain, node);
    expect(writing).toMatchObject({ provisionState: 'wait call-back', deployStep: WRITE_IMAGE });
    const sent = agent.received.find((r) => r.name === 'deploy.execute_deploy_step');
    expect(sent?.wait).toBe('false');
    expect(sent?.params.step).toMatchObject({
      interface: 'deploy',
      step: 'write_image',
      args: {
        image_info: { id: 'disk.img', urls: [IMAGE.image_source], disk_format: 'raw', os_hash_algo: 'sha256' },
      },
    });
    // the object form went to the agent as the gzipped ISO labelled config-2, base64
    const { args } = (sent as unknown as { params: { step: { args: { configdrive: string } } } }).params.step;
    const iso = gunzipSync(Buffer.from(args.configdrive, 'base64'));
    expect(iso.toString('latin1', 16 * 2048 + 40, 16 * 2048 + 48)).toBe('config-2');
    // still writing: the node keeps waiting
    expect(await heartbeat(plain, node)).toMatchObject({ provisionState: 'wait call-back', deployStep: WRITE_IMAGE });
    agent.finish('execute_deploy_step', 'SUCCEEDED', {
      deploy_step: WRITE_IMAGE,
      deploy_result: 'image (disk.img) written to device /dev/sda root_uuid=0x1234abcd',
    });
    const active = await heartbeat(plain, node);
    expect(active).toMatchObject({
      provisionState: 'active',
      targetProvisionState: null,
      powerState: 'power on',
      deployStep: {},
      driverInternalInfo: {
        fake_boot: 'instance',
        fake_boot_device: { device: 'disk', persistent: true },
        root_uuid_or_disk_id: '0x1234abcd',
      },
    });
    expect(active.driverInternalInfo.agent_url).toBeUndefined();
    expect(active.driverInternalInfo.agent_secret_token).toBeUndefined();
    expect(agent.received.map((r) => r.name)).toContain('standby.power_off');
    await expect(plain.runner.heartbeat(node.uuid)).rejects.toThrow(/is not waiting for its agent/);
  });

  it("fails the deploy with the agent's message when write_image fails, and powers the node off", async () => {
    const node = await nodeWritingItsImage();
    agent.finish('execute_deploy_step', 'FAILED', null, 'Image checksum mismatch: expected aaa, got bbb');
    const failed = await heartbeat(plain, node);
    expect(failed).toMatchObject({ provisionState: 'deploy failed', powerState: 'power off', deployStep: {} });
    expect(failed.lastError).toBe(
      `Failed to deploy node ${node.uuid}: Deploy step deploy.write_image failed: Image checksum mismatch: expected aaa, got bbb`,
    );
    // the next deploy's agent is asked for its steps again
    expect(failed.driverInternalInfo.agent_cached_deploy_steps).toBeUndefined();
  });

  it.each([
    [null, /The agent reported no image written \(deploy_result null\)/],
    [
      {
        image: {
          source_format: 'raw',
          written_format: 'qcow2',
          size: 1,
          os_hash_algo: 'sha256',
          os_hash_value: 'a'.repeat(64),
        },
      },
      /The agent left a qcow2 image on the disk, which the machine cannot boot/,
    ],
    [
      {
        image: {
          source_format: 'raw',
          written_format: 'raw',
          size: 1,
          os_hash_algo: 'sha256',
          os_hash_value: 'b'.repeat(64),
        },
      },
      /The agent wrote an image of sha256 b+, but sha256 a+ was asked/,
    ],
  ])(
    'fails the deploy, never active, when the agent reports a write other than asked (%j)',
    async (report, message) => {
      const node = await nodeWritingItsImage();
      agent.finish('execute_deploy_step', 'SUCCEEDED', { deploy_step: WRITE_IMAGE, deploy_result: report });
      const failed = await heartbeat(plain, node);
      expect(failed).toMatchObject({ provisionState: 'deploy failed', powerState: 'power off' });
      expect(failed.lastError).toMatch(/^Failed to deploy node .*: Deploy step deploy.write_image failed: /);
      expect(failed.lastError).toMatch(message);
    },
  );

  it('sends write_image again at the next heartbeat when the agent was busy', async () => {
    agentLikeIpa();
    agent.behaviours.set('deploy.execute_deploy_step', { kind: 'busy' });
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: IMAGE },
      { provisionState: 'available' },
    );
    await act(plain, node, 'deploy');
    expect(await heartbeat(plain, node)).toMatchObject({ provisionState: 'wait call-back', deployStep: WRITE_IMAGE });
    agent.behaviours.set('deploy.execute_deploy_step', { kind: 'async' });
    const writing = await heartbeat(plain, node);
    expect(writing).toMatchObject({ provisionState: 'wait call-back', deployStep: WRITE_IMAGE, lastError: null });
    expect(agent.received.filter((r) => r.name === 'deploy.execute_deploy_step')).toHaveLength(2);
    expect(agent.commands.at(-1)).toMatchObject({ command_name: 'execute_deploy_step', command_status: 'RUNNING' });
  });

  it('refuses plain-HTTP agents when TLS is required, and a changed agent certificate', async () => {
    const tasks = plain.tasks;
    const inventories = new InventoryProcessor({ ...stores, config: testConfig().inspector });
    const strict = new ProvisioningRunner({
      tasks,
      inventories,
      automatedClean: false,
      requireTls: true,
      hardwareCache: stores.hardwareSettings,
    });
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: IMAGE },
      { provisionState: 'wait call-back' },
    );
    await expect(strict.heartbeat(node.uuid, { callbackUrl: 'http://192.0.2.7:9999' })).rejects.toThrow(
      /TLS is required by the conductor/,
    );
    await stores.nodes.update(node.id, { driverInternalInfo: { agent_verify_ca: 'PEM-A' } });
    await expect(
      strict.heartbeat(node.uuid, { callbackUrl: 'https://192.0.2.7:9999', agentVerifyCa: 'PEM-B' }),
    ).rejects.toThrow(/change in the agent's TLS certificate/);
  });

  it('cleans through the agent: erase_devices_metadata only (erase_devices_priority 0), then available', async () => {
    agentLikeIpa();
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    expect(await act(cleaning, node, 'provide')).toMatchObject({
      provisionState: 'clean wait',
      targetProvisionState: 'available',
    });
    const erasing = await heartbeat(cleaning, node);
    expect(erasing).toMatchObject({
      provisionState: 'clean wait',
      cleanStep: { interface: 'deploy', step: 'erase_devices_metadata', priority: 99 },
    });
    expect(agent.received.filter((r) => r.name === 'clean.execute_clean_step')).toHaveLength(1);
    agent.finish('execute_clean_step', 'SUCCEEDED', { clean_step: erasing.cleanStep, clean_result: null });
    const available = await heartbeat(cleaning, node);
    expect(available).toMatchObject({ provisionState: 'available', powerState: 'power off', cleanStep: {} });
    expect(available.driverInternalInfo.fake_boot).toBeUndefined();
    expect(available.driverInternalInfo.clean_steps).toBeUndefined();
  });

  it('fails cleaning with the agent message', async () => {
    agentLikeIpa();
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    await act(cleaning, node, 'provide');
    await heartbeat(cleaning, node);
    agent.finish('execute_clean_step', 'FAILED', null, 'disk vanished');
    const failed = await heartbeat(cleaning, node);
    expect(failed).toMatchObject({ provisionState: 'clean failed', powerState: 'power off' });
    expect(failed.lastError).toMatch(/Clean step deploy.erase_devices_metadata failed: disk vanished/);
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
    agentLikeIpa();
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    const steps = [{ interface: 'deploy', step: 'erase_devices' }];
    expect(await act(plain, node, 'clean', { cleanSteps: steps })).toMatchObject({
      provisionState: 'clean wait',
      targetProvisionState: 'manageable',
      driverInternalInfo: { clean_steps: steps },
    });
    const erasing = await heartbeat(plain, node);
    expect(erasing.cleanStep).toMatchObject({ step: 'erase_devices' });
    agent.finish('execute_clean_step', 'SUCCEEDED', { clean_step: erasing.cleanStep });
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
    agentLikeIpa();
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'active' });
    expect(await act(plain, node, 'rescue', { rescuePassword: 'pw' })).toMatchObject({
      provisionState: 'rescue wait',
      driverInternalInfo: { fake_boot: 'ramdisk:rescue' },
    });
    const rescued = await heartbeat(plain, node);
    expect(rescued.lastError).toBeNull();
    expect(rescued.provisionState).toBe('rescue');
    // the agent got the password hashed, never in clear
    const finalize = agent.received.find((r) => r.name === 'rescue.finalize_rescue');
    expect(finalize?.params).toMatchObject({ hashed: true, rescue_password: expect.stringMatching(/^\$6\$/) });
    expect(JSON.stringify(finalize?.params)).not.toContain('"pw"');
    expect(await act(plain, node, 'unrescue')).toMatchObject({
      provisionState: 'active',
      instanceInfo: {},
      driverInternalInfo: { fake_boot: 'instance' },
    });
  });

  it('fails a wait that outlived its timeout, and only then', async () => {
    const node = await createNode(
      stores,
      { deployInterface: 'direct', instanceInfo: IMAGE },
      { provisionState: 'available' },
    );
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
