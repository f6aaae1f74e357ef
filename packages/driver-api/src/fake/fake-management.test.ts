import { InvalidParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { createTestNode, createTestTask } from '../testing/test-task.js';
import { FAKE_INDICATORS_KEY } from './fake-indicators.js';
import { FakeManagementInterface } from './fake-management.js';

describe('fake management boot device', () => {
  it("records the device with the task's next write (writeWithNext), not a write of its own", async () => {
    const management = new FakeManagementInterface();
    const task = createTestTask(createTestNode({ driverInternalInfo: { kept: 1 } }), []);
    await management.setBootDevice(task, 'pxe', false);
    expect(task.updateCalls).toEqual([]);
    expect(task.writeWithNextCalls).toEqual([
      { driverInternalInfo: { kept: 1, fake_boot_device: { device: 'pxe', persistent: false } } },
    ]);
    expect(await management.getBootDevice(task)).toEqual({ bootDevice: 'pxe', persistent: false });
    await expect(management.setBootDevice(task, 'bios', true)).rejects.toThrow(InvalidParameterValue);
  });
});

describe('fake management indicators', () => {
  const management = new FakeManagementInterface();

  it('lists a chassis, a system and a disk LED, or those of one component', async () => {
    const task = createTestTask(createTestNode(), []);
    expect(await management.getSupportedIndicators(task)).toEqual({
      chassis: { 'led-0': { readonly: true, states: ['off', 'on'] } },
      system: { led: { readonly: false, states: ['blinking', 'off', 'on'] } },
      disk: { 'led-0': { readonly: false, states: ['off', 'on'] } },
    });
    expect(await management.getSupportedIndicators(task, 'system')).toEqual({
      system: { led: { readonly: false, states: ['blinking', 'off', 'on'] } },
    });
    expect(await management.getSupportedIndicators(task, 'nic')).toEqual({});
  });

  it('keeps the state set per node in driver_internal_info, each LED showing its initial state until then', async () => {
    const node = createTestNode();
    const other = createTestNode();
    expect(await management.getIndicatorState(createTestTask(node, []), 'system', 'led')).toBe('off');
    expect(await management.getIndicatorState(createTestTask(node, []), 'chassis', 'led-0')).toBe('on');
    await management.setIndicatorState(createTestTask(node, []), 'system', 'led', 'blinking');
    await management.setIndicatorState(createTestTask(node, []), 'disk', 'led-0', 'on');
    expect(node.driverInternalInfo[FAKE_INDICATORS_KEY]).toEqual({
      system: { led: 'blinking' },
      disk: { 'led-0': 'on' },
    });
    expect(await management.getIndicatorState(createTestTask(node, []), 'system', 'led')).toBe('blinking');
    expect(await management.getIndicatorState(createTestTask(node, []), 'disk', 'led-0')).toBe('on');
    expect(await management.getIndicatorState(createTestTask(other, []), 'system', 'led')).toBe('off');
  });

  it.each([
    ['chassis', 'led-0', 'off', 'Indicator led-0 of component chassis is read-only.'],
    ['disk', 'led-0', 'blinking', 'Invalid state blinking for indicator led-0 of component disk, supported: off, on.'],
    ['nic', 'led', 'on', 'Invalid component nic specified.'],
    ['system', 'led-7', 'on', 'Invalid indicator led-7 specified.'],
  ] as const)('refuses to set %s %s to %s', async (component, indicator, state, message) => {
    const node = createTestNode();
    await expect(management.setIndicatorState(createTestTask(node, []), component, indicator, state)).rejects.toThrow(
      new InvalidParameterValue(message),
    );
    expect(node.driverInternalInfo[FAKE_INDICATORS_KEY]).toBeUndefined();
  });

  it('refuses to read an unknown indicator', async () => {
    const task = createTestTask(createTestNode(), []);
    await expect(management.getIndicatorState(task, 'power', 'led')).rejects.toThrow(
      'Invalid component power specified.',
    );
    await expect(management.getIndicatorState(task, 'chassis', 'led')).rejects.toThrow(
      'Invalid indicator led specified.',
    );
  });
});

describe('fake management health', () => {
  const management = new FakeManagementInterface();
  it('reports driver_info fake_health, OK without it, and refuses any other value', async () => {
    expect(await management.getHealth(createTestTask(createTestNode(), []))).toBe('OK');
    for (const health of ['OK', 'Warning', 'Critical']) {
      const task = createTestTask(createTestNode({ driverInfo: { fake_health: health } }), []);
      expect(await management.getHealth(task)).toBe(health);
    }
    const bad = createTestTask(createTestNode({ driverInfo: { fake_health: 'Bad' } }), []);
    await expect(management.getHealth(bad)).rejects.toThrow(
      'driver_info fake_health must be one of OK, Warning, Critical, not "Bad".',
    );
    await expect(management.validate(bad)).rejects.toBeInstanceOf(InvalidParameterValue);
  });
});
