import type { BiosSetting, FirmwareComponent } from '@bmaas/common';
import type { BiosInterface, FirmwareInterface, ProvisionStep, UserStep } from '@bmaas/driver-api';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import {
  cacheHardwareSettings,
  executeOutOfBandStep,
  type HardwareCache,
  isOutOfBandStep,
  outOfBandStep,
} from './out-of-band.js';

const SETTING: BiosSetting = {
  name: 'ProcVirtualization',
  value: 'Enabled',
  attributeType: null,
  allowableValues: null,
  lowerBound: null,
  upperBound: null,
  minLength: null,
  maxLength: null,
  readOnly: null,
  resetRequired: null,
  unique: null,
};

/** A bios interface offering apply_configuration out of band, recording what it ran. */
function biosWithSteps(ran: UserStep[]): BiosInterface {
  let value = 'Enabled';
  return {
    getProperties: () => ({}),
    validate: async () => {},
    getOutOfBandSteps: () => [
      { interface: 'bios', step: 'apply_configuration', priority: 0, args: {}, requires_ramdisk: false },
    ],
    executeOutOfBandStep: async (_task, step) => {
      ran.push(step);
      value = 'Disabled';
      return 'done';
    },
    getSettings: async () => [{ ...SETTING, value }],
  };
}

function recordingCache(): HardwareCache & { bios: BiosSetting[][]; firmware: FirmwareComponent[][] } {
  const bios: BiosSetting[][] = [];
  const firmware: FirmwareComponent[][] = [];
  return {
    bios,
    firmware,
    replaceBiosSettings: async (_id, settings) => {
      bios.push([...settings]);
    },
    replaceFirmwareComponents: async (_id, components) => {
      firmware.push([...components]);
    },
  };
}

describe('out-of-band steps', () => {
  it('runs a step the node interface offers, marked without ramdisk, and caches the BIOS settings after it', async () => {
    const ran: UserStep[] = [];
    const task = createTestTask(createTestNode(), [], { driver: { bios: biosWithSteps(ran) } });
    const step: ProvisionStep = {
      interface: 'bios',
      step: 'apply_configuration',
      priority: 0,
      args: { settings: [{ name: 'ProcVirtualization', value: 'Disabled' }] },
    };
    expect(isOutOfBandStep(task, step)).toBe(true);
    expect(isOutOfBandStep(task, { interface: 'bios', step: 'factory_reset' })).toBe(false);
    expect(isOutOfBandStep(task, { interface: 'deploy', step: 'erase_devices' })).toBe(false);
    expect(outOfBandStep(task, step)).toMatchObject({ requires_ramdisk: false, args: step.args });
    const cache = recordingCache();
    expect(await executeOutOfBandStep(task, step, cache)).toBe('done');
    expect(ran).toEqual([step]);
    expect(cache.bios).toEqual([[{ ...SETTING, value: 'Disabled' }]]);
  });

  it('offers none where the interface has no out-of-band steps (the generic no-bios)', () => {
    const task = createTestTask(createTestNode(), []);
    expect(isOutOfBandStep(task, { interface: 'bios', step: 'apply_configuration' })).toBe(false);
  });

  it('caches what bios and firmware report at verify, and goes on when one fails', async () => {
    const firmware: FirmwareInterface = {
      getProperties: () => ({}),
      validate: async () => {},
      getComponents: async () => {
        throw new Error('BMC gone');
      },
    };
    const task = createTestTask(createTestNode(), [], { driver: { bios: biosWithSteps([]), firmware } });
    const cache = recordingCache();
    await cacheHardwareSettings(task, cache);
    expect(cache.bios).toEqual([[SETTING]]);
    expect(cache.firmware).toEqual([]);
  });
});
