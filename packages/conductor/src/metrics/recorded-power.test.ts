import { PowerState } from '@bmaas/common';
import { FakePowerInterface, type Task } from '@bmaas/driver-api';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import { type PowerActionObserver, RecordedPowerInterface } from './recorded-power.js';

class RefusingPower extends FakePowerInterface {
  override async setPowerState(_task: Task, _state: PowerState): Promise<void> {
    throw new Error('BMC said no');
  }
}

class PowerLog implements PowerActionObserver {
  readonly actions: Array<[string, PowerState, boolean]> = [];
  powerActionDone(interfaceName: string, target: PowerState, succeeded: boolean): void {
    this.actions.push([interfaceName, target, succeeded]);
  }
}

describe('RecordedPowerInterface', () => {
  it('passes every call on and reports each power change with its result', async () => {
    const log = new PowerLog();
    const fake = new RecordedPowerInterface(new FakePowerInterface(), 'fake', log);
    const task = createTestTask(createTestNode(), []);
    await fake.setPowerState(task, PowerState.ON);
    expect(await fake.getPowerState(task)).toBe(PowerState.ON);
    await fake.validate(task);
    expect(fake.getProperties()).toEqual(new FakePowerInterface().getProperties());

    const refusing = new RecordedPowerInterface(new RefusingPower(), 'ipmitool', log);
    await expect(refusing.setPowerState(task, PowerState.OFF)).rejects.toThrow('BMC said no');
    expect(log.actions).toEqual([
      ['fake', PowerState.ON, true],
      ['ipmitool', PowerState.OFF, false],
    ]);
  });
});
