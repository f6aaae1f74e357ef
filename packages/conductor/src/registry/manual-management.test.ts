import { createSilentLogger, UnsupportedDriverExtension } from '@bmaas/common';
import type { ProvisionStep } from '@bmaas/driver-api';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import { DriverRegistry } from './driver-registry.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';
import { loadConductorConfig } from './plugin-config.js';

describe('manual-management hardware type', () => {
  const registry = DriverRegistry.create(DRIVER_CATALOG, {
    config: loadConductorConfig({
      env: {},
      overrides: {
        DEFAULT: {
          enabled_hardware_types: ['manual-management'],
          enabled_boot_interfaces: ['fake', 'ipxe'],
          enabled_management_interfaces: ['noop'],
        },
      },
    }),
    logger: createSilentLogger(),
    conductorHostname: 'c1',
  });

  function manualTask() {
    const node = createTestNode({
      driver: 'manual-management',
      bootInterface: 'ipxe',
      deployInterface: 'direct',
      powerInterface: 'fake',
      managementInterface: 'noop',
      provisionState: 'deploying',
      powerState: 'power off',
    });
    // Its own deploy, power and management; the fake boot stands in for iPXE's files.
    const { boot: _ipxe, ...driver } = registry.driverFor(node);
    return createTestTask(node, [], { driver });
  }

  it('deploy boots the ramdisk, records power on and waits for the machine a person boots', async () => {
    const task = manualTask();
    expect(task.driver.deploy.constructor.name).toBe('DirectDeployInterface');
    const [first] = await task.driver.deploy.getDeploySteps(task);
    expect(first?.step).toBe('deploy');
    expect(await task.driver.deploy.executeDeployStep(task, first as ProvisionStep)).toBe('wait');
    expect(task.node.driverInternalInfo.fake_boot).toBe('ramdisk:deploy');
    expect(task.node.powerState).toBe('power on');
    // The boot device is the person's business: accepted, never stored or read back.
    expect(await task.driver.management.getBootDevice(task)).toEqual({ bootDevice: null, persistent: null });
  });

  it('has no NMI', async () => {
    const task = manualTask();
    await expect(task.driver.management.injectNmi(task)).rejects.toThrow(UnsupportedDriverExtension);
  });
});
