import { describe, expect, it } from 'vitest';
import { FakeBootInterface } from '../fake/fake-boot.js';
import { createTestNode, createTestPort, createTestTask } from './test-task.js';

describe('createTestTask', () => {
  it('writes exclusive updates into the record, so later tasks see them', async () => {
    const record = createTestNode();
    const ports = [createTestPort(record)];
    const task = createTestTask(record, ports);
    const earlier = createTestTask(record, ports, { shared: true });

    const updated = await task.updateNode({ lastError: 'boom' });

    expect(updated.lastError).toBe('boom');
    expect(task.node.lastError).toBe('boom');
    expect(record.lastError).toBe('boom');
    expect(record.updatedAt).toBeInstanceOf(Date);
    expect(earlier.node.lastError).toBeNull();
    expect(createTestTask(record, ports, { shared: true }).node.lastError).toBe('boom');
    expect(task.updateCalls).toEqual([{ lastError: 'boom' }]);
  });

  it('refuses updates under a shared lock and records the attempt', async () => {
    const record = createTestNode();
    const task = createTestTask(record, [], { shared: true });
    await expect(task.updateNode({ lastError: 'x' })).rejects.toThrow(/shared lock/);
    expect(task.updateCalls).toEqual([{ lastError: 'x' }]);
    expect(record.lastError).toBeNull();
  });

  it('writes writeWithNext changes into the record and records the call; refuses them under a shared lock', () => {
    const record = createTestNode();
    const task = createTestTask(record, []);
    task.writeWithNext({ powerState: 'power on' });
    expect(task.node.powerState).toBe('power on');
    expect(record.powerState).toBe('power on');
    expect(task.writeWithNextCalls).toEqual([{ powerState: 'power on' }]);
    expect(task.updateCalls).toEqual([]);

    const shared = createTestTask(record, [], { shared: true });
    expect(() => shared.writeWithNext({ powerState: 'power off' })).toThrow(/writeWithNext .*shared lock/);
    expect(() => task.writeWithNext({ driverInfo: {} } as never)).toThrow(/writeWithNext cannot change driverInfo/);
    expect(record.powerState).toBe('power on');
  });

  it('refuses fields a hardware interface may not change', async () => {
    const record = createTestNode();
    const task = createTestTask(record, []);
    await expect(task.updateNode({ driverInfo: {} } as never)).rejects.toThrow(/driverInfo/);
    expect(record.updatedAt).toBeNull();
  });

  it('hands out snapshots: changing them does not change the record', () => {
    const record = createTestNode({ driverInfo: { a: 1 } });
    const port = createTestPort(record);
    const task = createTestTask(record, [port]);
    (task.node.driverInfo as Record<string, unknown>).a = 2;
    expect(record.driverInfo).toEqual({ a: 1 });
    expect(task.ports).toEqual([port]);
    expect(port.address).toMatch(/^02(:[0-9a-f]{2}){5}$/);
  });

  it('gives the node fake interfaces unless told otherwise', () => {
    const boot = new FakeBootInterface();
    const task = createTestTask(createTestNode(), [], { driver: { boot } });
    expect(task.driver.boot).toBe(boot);
    expect(typeof task.driver.power.setPowerState).toBe('function');
  });
});
