import { PowerState } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { createTestNode, createTestTask } from '../testing/test-task.js';
import { FakePowerInterface } from './fake-power.js';

describe('fake power', () => {
  it('reports no power state until one is set, then the state set (as Ironic fake power)', async () => {
    const power = new FakePowerInterface();
    const node = createTestNode();
    expect(await power.getPowerState(createTestTask(node, []))).toBeNull();
    await power.setPowerState(createTestTask(node, []), PowerState.REBOOT);
    expect(await power.getPowerState(createTestTask(node, []))).toBe(PowerState.ON);
    await power.setPowerState(createTestTask(node, []), PowerState.SOFT_POWER_OFF);
    expect(await power.getPowerState(createTestTask(node, []))).toBe(PowerState.OFF);
  });

  it("records the state with the task's next write (writeWithNext), not a write of its own", async () => {
    const task = createTestTask(createTestNode({ targetPowerState: PowerState.ON }), []);
    await new FakePowerInterface().setPowerState(task, PowerState.ON);
    expect(task.updateCalls).toEqual([]);
    expect(task.writeWithNextCalls).toEqual([{ powerState: PowerState.ON, targetPowerState: null }]);
    expect(task.node.powerState).toBe(PowerState.ON);
  });
});
