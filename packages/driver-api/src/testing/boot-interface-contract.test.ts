import { BootConfigNotFound } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import type { RamdiskMode } from '../boot.js';
import { FAKE_BOOT_CONFIG_NAME, FakeBootInterface, fakeBootTarget } from '../fake/fake-boot.js';
import type { Task } from '../task.js';
import {
  type BootContractFixture,
  BootContractViolation,
  bootTargetByImageNames,
  checkBootTargets,
  checkNodeIsolation,
} from './boot-interface-contract.js';

/**
 * Deliberately broken: keeps configurations by hardware type instead of by
 * node, so every fake-hardware node is served the last one prepared.
 */
class ConfigPerHardwareTypeBoot extends FakeBootInterface {
  private readonly configs = new Map<string, string>();

  override async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    await super.prepareRamdisk(task, mode);
    this.configs.set(task.node.driver, `fake boot config for ${task.node.uuid}: ramdisk:${mode}\n`);
  }

  override async prepareInstance(task: Task): Promise<void> {
    await super.prepareInstance(task);
    this.configs.set(task.node.driver, `fake boot config for ${task.node.uuid}: instance\n`);
  }

  override async getBootConfig(task: Task, name: string): Promise<string> {
    const config = this.configs.get(task.node.driver);
    if (name !== FAKE_BOOT_CONFIG_NAME || config === undefined) throw new BootConfigNotFound(task.node.uuid, name);
    return config;
  }
}

/** Deliberately broken: boots the deploy ramdisk whatever mode it is asked for. */
class DeployForRescueBoot extends FakeBootInterface {
  override prepareRamdisk(task: Task, _mode: RamdiskMode): Promise<void> {
    return super.prepareRamdisk(task, 'deploy');
  }
}

const fixtureOf = (iface: FakeBootInterface): BootContractFixture => ({
  iface,
  configName: FAKE_BOOT_CONFIG_NAME,
  bootTarget: fakeBootTarget,
});

describe('the boot interface contract suite', () => {
  it('passes the fake, which keeps every rule', async () => {
    await checkNodeIsolation(fixtureOf(new FakeBootInterface()));
    await checkBootTargets(fixtureOf(new FakeBootInterface()));
  });

  it("fails an interface that serves one node's configuration to another, naming the rule", async () => {
    const failure = checkNodeIsolation(fixtureOf(new ConfigPerHardwareTypeBoot()));
    await expect(failure).rejects.toBeInstanceOf(BootContractViolation);
    await expect(failure).rejects.toThrow(/rule "ownConfiguration"/);
  });

  it('fails an interface that boots the deploy ramdisk for rescue, naming the rule', async () => {
    const failure = checkBootTargets(fixtureOf(new DeployForRescueBoot()));
    await expect(failure).rejects.toThrow(
      /rule "bootsItsMode" .*after prepareRamdisk\(rescue\) the configuration boots deploy, not rescue/,
    );
  });

  it('reads what a configuration boots from the kernel it names', () => {
    expect(bootTargetByImageNames('kernel http://h/n/deploy_kernel\ninitrd http://h/n/deploy_ramdisk')).toBe('deploy');
    expect(bootTargetByImageNames('linux /n/rescue_kernel\ninitrd /n/rescue_ramdisk')).toBe('rescue');
    expect(bootTargetByImageNames('sanboot --drive 0x80')).toBe('instance');
    expect(bootTargetByImageNames('kernel deploy_kernel\nkernel rescue_kernel')).toBe('ambiguous');
  });
});
