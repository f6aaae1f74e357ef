import { InvalidStateRequested, MissingParameterValue, type NodeRecord } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import { createNode } from '@bmaas/db/testing';
import { FAKE_SERVICE_STEPS_KEY } from '@bmaas/driver-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunnerFixture, startRunnerFixture } from '../testing/runner-fixture.js';
import type { ProvisioningRunner } from './runner.js';

let fixture: RunnerFixture;
let stores: Stores;
let runner: ProvisioningRunner;

beforeAll(async () => {
  fixture = await startRunnerFixture();
  ({ stores, runner } = fixture);
});
afterAll(async () => {
  await fixture?.drop();
});

/** Fires an action, waits for its background work, returns the node as stored. */
const act = (node: NodeRecord, event: string, serviceSteps?: unknown[]): Promise<NodeRecord> =>
  fixture.act(node, event, serviceSteps ? { serviceSteps } : {});

const activeNode = (fields: Parameters<typeof createNode>[1] = {}, state: Partial<NodeRecord> = {}) =>
  createNode(stores, fields, { provisionState: 'active', instanceInfo: { image_source: 'http://x/i.img' }, ...state });

describe('servicing an active node (the service verb)', () => {
  it('runs the steps through the fake deploy interface and power, then is active again', async () => {
    const node = await activeNode();
    const serviced = await act(node, 'service', [
      { interface: 'deploy', step: 'update_firmware', args: { force: true } },
      { interface: 'power', step: 'power_off' },
      { interface: 'bios', step: 'apply_configuration' },
    ]);
    expect(serviced).toMatchObject({
      provisionState: 'active',
      targetProvisionState: null,
      lastError: null,
      reservation: null,
      powerState: 'power off',
      instanceInfo: { image_source: 'http://x/i.img' },
    });
    expect(serviced.driverInternalInfo[FAKE_SERVICE_STEPS_KEY]).toEqual([
      'deploy.update_firmware',
      'bios.apply_configuration',
    ]);
    expect(serviced.driverInternalInfo).not.toHaveProperty('service_steps');
    expect(serviced.driverInternalInfo).not.toHaveProperty('service_step');
  });

  it('with disable_ramdisk (1.108) runs only the steps the conductor runs itself', async () => {
    const node = await activeNode();
    const powered = await fixture.act(node, 'service', {
      serviceSteps: [{ interface: 'power', step: 'power_off' }],
      disableRamdisk: true,
    });
    expect(powered).toMatchObject({ provisionState: 'active', powerState: 'power off', lastError: null });
    expect(powered.driverInternalInfo).not.toHaveProperty('service_disable_ramdisk');
    const refused = await fixture.act(powered, 'service', {
      serviceSteps: [{ interface: 'deploy', step: 'update_firmware' }],
      disableRamdisk: true,
    });
    expect(refused).toMatchObject({
      provisionState: 'service failed',
      lastError: `Failed to service node ${node.uuid}: service step deploy.update_firmware requires booting a ramdisk`,
    });
    expect(refused.driverInternalInfo[FAKE_SERVICE_STEPS_KEY]).toBeUndefined();
  });

  it('needs service steps, an active node and no maintenance', async () => {
    const node = await activeNode();
    await expect(runner.doProvisioningAction(node.uuid, 'service')).rejects.toBeInstanceOf(MissingParameterValue);
    await expect(runner.doProvisioningAction(node.uuid, 'service', { serviceSteps: [] })).rejects.toBeInstanceOf(
      MissingParameterValue,
    );
    const available = await createNode(stores, {}, { provisionState: 'available' });
    const steps = { serviceSteps: [{ interface: 'deploy', step: 'x' }] };
    await expect(runner.doProvisioningAction(available.uuid, 'service', steps)).rejects.toBeInstanceOf(
      InvalidStateRequested,
    );
    const maintained = await activeNode({ maintenance: true });
    await expect(runner.doProvisioningAction(maintained.uuid, 'service', steps)).rejects.toThrow(
      /while it is in maintenance mode/,
    );
    expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'active', reservation: null });
  });

  it('fails in service failed where the deploy interface runs no service steps (direct)', async () => {
    const node = await activeNode({ deployInterface: 'direct' });
    const step = { interface: 'deploy', step: 'update_firmware' };
    const failed = await act(node, 'service', [step]);
    expect(failed).toMatchObject({
      provisionState: 'service failed',
      targetProvisionState: null,
      reservation: null,
      lastError: `Failed to service node ${node.uuid}: node does not support this service step: deploy.update_firmware`,
    });
    expect(failed.driverInternalInfo).not.toHaveProperty('service_steps');
    // From service failed: abort goes back to active (the instance is untouched); service may be tried again.
    const aborted = await act(node, 'abort');
    expect(aborted).toMatchObject({
      provisionState: 'active',
      targetProvisionState: null,
      lastError: 'By request, the service operation was aborted.',
      instanceInfo: { image_source: 'http://x/i.img' },
    });
  });

  it('holds at a hold step; unhold goes on with the next step, abort ends the service in active', async () => {
    const node = await activeNode();
    const steps = [
      { interface: 'deploy', step: 'first' },
      { interface: 'deploy', step: 'hold' },
      { interface: 'deploy', step: 'second' },
    ];
    const held = await act(node, 'service', steps);
    expect(held).toMatchObject({ provisionState: 'service hold', targetProvisionState: 'active', reservation: null });
    expect(held.driverInternalInfo).toMatchObject({
      service_step: steps[1],
      [FAKE_SERVICE_STEPS_KEY]: ['deploy.first'],
    });
    const done = await act(node, 'unhold');
    expect(done).toMatchObject({ provisionState: 'active', targetProvisionState: null, lastError: null });
    expect(done.driverInternalInfo[FAKE_SERVICE_STEPS_KEY]).toEqual(['deploy.first', 'deploy.second']);

    await act(node, 'service', [
      { interface: 'deploy', step: 'hold' },
      { interface: 'deploy', step: 'never' },
    ]);
    const aborted = await act(node, 'abort');
    expect(aborted).toMatchObject({
      provisionState: 'active',
      targetProvisionState: null,
      lastError: 'By request, the service operation was aborted.',
    });
    expect(aborted.driverInternalInfo).not.toHaveProperty('service_step');
    expect(aborted.driverInternalInfo[FAKE_SERVICE_STEPS_KEY]).toEqual(['deploy.first', 'deploy.second']);
  });

  it('refuses to abort a failed service while the node is in maintenance', async () => {
    const node = await activeNode({ maintenance: true }, { provisionState: 'service failed' });
    await expect(runner.doProvisioningAction(node.uuid, 'abort')).rejects.toThrow(
      `Can not abort service on node "${node.uuid}" while it is in maintenance mode.`,
    );
  });
});
