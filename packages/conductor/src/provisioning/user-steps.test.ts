import { InvalidParameterValue, type NodeRecord } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import { createNode } from '@bmaas/db/testing';
import { FAKE_DEPLOY_STEPS_KEY, type ProvisionStep } from '@bmaas/driver-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunnerFixture, startRunnerFixture } from '../testing/runner-fixture.js';
import type { ProvisioningRequest, ProvisioningRunner } from './runner.js';
import { mergeDeploySteps } from './steps.js';

const step = (iface: string, name: string, priority: number, args = {}): ProvisionStep => ({
  interface: iface,
  step: name,
  priority,
  args,
});
/** The out-of-band deploy steps of `direct`. */
const DIRECT = [
  step('deploy', 'deploy', 100),
  step('deploy', 'write_image', 80),
  step('deploy', 'prepare_instance_boot', 60),
  step('deploy', 'tear_down_agent', 40),
  step('deploy', 'boot_instance', 20),
  step('bios', 'apply_configuration', 0),
];
const names = (steps: readonly ProvisionStep[]) => steps.map((s) => `${s.interface}.${s.step}:${s.priority}`);

describe('mergeDeploySteps (user deploy steps over the interface steps)', () => {
  it('runs the enabled driver steps, highest priority first, when the user gives none', () => {
    expect(names(mergeDeploySteps(DIRECT, []))).toEqual([
      'deploy.deploy:100',
      'deploy.write_image:80',
      'deploy.prepare_instance_boot:60',
      'deploy.tear_down_agent:40',
      'deploy.boot_instance:20',
    ]);
  });

  it('lets a user step set the priority and args of the driver step, disable it (0) or enable one', () => {
    const merged = mergeDeploySteps(DIRECT, [
      step('deploy', 'boot_instance', 90, { x: 1 }),
      step('deploy', 'tear_down_agent', 0),
      step('bios', 'apply_configuration', 80, { settings: [] }),
    ]);
    expect(names(merged)).toEqual([
      'deploy.deploy:100',
      'deploy.boot_instance:90',
      // same priority: the deploy interface's step before the bios one (Ironic's interface order)
      'deploy.write_image:80',
      'bios.apply_configuration:80',
      'deploy.prepare_instance_boot:60',
    ]);
    expect(merged[1]?.args).toEqual({ x: 1 });
    expect(merged[3]?.args).toEqual({ settings: [] });
  });

  it("refuses an unknown step, the core step given a priority, and a step given twice, with Ironic's messages", () => {
    expect(() => mergeDeploySteps(DIRECT, [step('deploy', 'nonexistent', 10)])).toThrow(
      new InvalidParameterValue(
        `Validation of deploy steps from "deploy steps" argument failed.node does not support this deploy step: {'interface': 'deploy', 'step': 'nonexistent', 'priority': 10, 'args': {}}`,
      ),
    );
    expect(() => mergeDeploySteps(DIRECT, [step('deploy', 'deploy', 50)])).toThrow(
      'deploy step deploy on interface deploy is a core step and cannot be overridden by user steps',
    );
    expect(names(mergeDeploySteps(DIRECT, [step('deploy', 'deploy', 0)]))).not.toContain('deploy.deploy:100');
    expect(() =>
      mergeDeploySteps(DIRECT, [step('deploy', 'write_image', 10), step('deploy', 'write_image', 20)]),
    ).toThrow('Duplicate deploy steps for deploy.write_image');
  });
});

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

const act = (node: NodeRecord, event: string, request: ProvisioningRequest) => fixture.act(node, event, request);

describe('deploy_steps through the runner and the fake deploy interface', () => {
  it('runs the user step the fake offers at priority 0 after the core step, then forgets the user steps', async () => {
    const node = await createNode(stores, {}, { provisionState: 'available' });
    const deployed = await act(node, 'deploy', {
      deploySteps: [{ interface: 'deploy', step: 'write_marker', args: { path: '/m' }, priority: '50' }],
    });
    expect(deployed).toMatchObject({ provisionState: 'active', lastError: null, deployStep: {} });
    expect(deployed.driverInternalInfo[FAKE_DEPLOY_STEPS_KEY]).toEqual(['deploy.deploy', 'deploy.write_marker']);
    expect(deployed.driverInternalInfo.user_deploy_steps).toBeUndefined();
  });

  it('rebuilds with the core step disabled: only the user step runs', async () => {
    const node = await createNode(stores, {}, { provisionState: 'active' });
    const rebuilt = await act(node, 'rebuild', {
      deploySteps: [
        { interface: 'deploy', step: 'deploy', args: {}, priority: 0 },
        { interface: 'deploy', step: 'write_marker', args: {}, priority: 10 },
      ],
    });
    expect(rebuilt.provisionState).toBe('active');
    expect(rebuilt.driverInternalInfo[FAKE_DEPLOY_STEPS_KEY]).toEqual(['deploy.write_marker']);
  });

  it('refuses an unknown step before anything changes', async () => {
    const node = await createNode(stores, {}, { provisionState: 'available' });
    const error = await runner
      .doProvisioningAction(node.uuid, 'deploy', {
        deploySteps: [{ interface: 'bios', step: 'apply_configuration', args: {}, priority: 10 }],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidParameterValue);
    expect((error as Error).message).toContain(
      "node does not support this deploy step: {'interface': 'bios', 'step': 'apply_configuration', 'priority': 10, 'args': {}}",
    );
    expect(await stores.nodes.getById(node.id)).toMatchObject({ provisionState: 'available', reservation: null });
  });
});

describe('manual cleaning with disable_ramdisk', () => {
  const cleanSteps = [{ interface: 'management', step: 'clear_job_queue', args: {} }];

  it('runs every step of the fake at once, without preparing a ramdisk, back to manageable', async () => {
    const node = await createNode(stores, {}, { provisionState: 'manageable' });
    const cleaned = await act(node, 'clean', { cleanSteps, disableRamdisk: true });
    expect(cleaned).toMatchObject({ provisionState: 'manageable', targetProvisionState: null, lastError: null });
    expect(cleaned.driverInternalInfo.cleaning_disable_ramdisk).toBeUndefined();
    expect(cleaned.driverInternalInfo.clean_steps).toBeUndefined();
  });

  it('fails with direct, whose steps need the ramdisk, without booting it', async () => {
    const node = await createNode(stores, { deployInterface: 'direct' }, { provisionState: 'manageable' });
    const failed = await act(node, 'clean', {
      cleanSteps: [{ interface: 'deploy', step: 'erase_devices' }],
      disableRamdisk: true,
    });
    expect(failed.provisionState).toBe('clean failed');
    // (the stored step's keys come back in the database's order)
    expect(failed.lastError).toMatch(
      new RegExp(
        `^Failed to clean node ${node.uuid}: clean step \\{.*'step': 'erase_devices'.*\\} requires booting a ramdisk$`,
      ),
    );
    expect(failed.driverInternalInfo.agent_url).toBeUndefined();
  });
});
