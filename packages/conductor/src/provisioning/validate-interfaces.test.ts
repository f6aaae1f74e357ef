import type { AGENT_OPTIONS } from '@bmaas/agent-client';
import { pluginSection } from '@bmaas/common';
import { type DIRECT_DEPLOY_OPTIONS, directDeployInterface } from '@bmaas/direct-deploy-interface';
import { FakePowerInterface, type Task } from '@bmaas/driver-api';
import { createTestInterfaceDeps, createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import { testConfig } from '../testing/fixtures.js';
import { validateInterfaces } from './validate-interfaces.js';

class UnconfiguredPower extends FakePowerInterface {
  override async validate(_task: Task): Promise<void> {
    throw new Error('qemu_qmp_socket is required');
  }
}

describe('validateInterfaces', () => {
  const config = testConfig();
  const deploy = directDeployInterface.create(
    createTestInterfaceDeps(pluginSection<typeof AGENT_OPTIONS>(config, 'agent'), {
      coreSettings: { deploy: pluginSection<typeof DIRECT_DEPLOY_OPTIONS>(config, 'deploy') },
    }),
  );

  it("reports every interface's result and reason, none stopping the others", async () => {
    const task = createTestTask(createTestNode({ instanceInfo: {} }), [], {
      driver: { deploy, power: new UnconfiguredPower() },
    });
    expect(await validateInterfaces(task)).toEqual({
      bios: { result: null, reason: 'not supported' },
      boot: { result: true },
      console: { result: null, reason: 'not supported' },
      deploy: { result: false, reason: 'instance_info.image_source is required to deploy.' },
      firmware: { result: null, reason: 'not supported' },
      inspect: { result: null, reason: 'not supported' },
      management: { result: true },
      network: { result: null, reason: 'not supported' },
      power: { result: false, reason: 'qemu_qmp_socket is required' },
      raid: { result: null, reason: 'not supported' },
      rescue: { result: true },
      storage: { result: null, reason: 'not supported' },
    });
  });

  it('answers true for a node ready to deploy', async () => {
    const instanceInfo = { image_source: 'http://i/disk.img', image_checksum: 'a'.repeat(64) };
    const task = createTestTask(createTestNode({ instanceInfo }), [], { driver: { deploy } });
    const results = await validateInterfaces(task);
    expect(results.deploy).toEqual({ result: true });
    expect(results.power).toEqual({ result: true });
  });
});
