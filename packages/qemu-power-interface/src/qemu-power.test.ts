import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSilentLogger,
  InvalidParameterValue,
  loadConfig,
  MissingParameterValue,
  PowerState,
  pluginSection,
  until,
  waitFor,
} from '@bmaas/common';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QEMU_OPTIONS, qemuPowerInterface } from './qemu-power.js';
import { withQmp } from './qmp-client.js';

const QEMU = '/usr/bin/qemu-system-x86_64';
/** Without QEMU the machine tests skip, but not under CI=true: there they fail, naming what is missing. */
const run = existsSync(QEMU) || process.env.CI === 'true';
const power = qemuPowerInterface.create({
  settings: pluginSection<typeof QEMU_OPTIONS>(loadConfig({ env: {}, pluginSections: { qemu: QEMU_OPTIONS } }), 'qemu'),
  coreSettings: {},
  deploy: loadConfig({ env: {} }).deploy,
  discovery: loadConfig({ env: {} }).discovery,
  apiPublicEndpoint: null,
  inspectionCallbackEndpoint: null,
  fileUrlAllowedPaths: [],
  powerStateChangeTimeout: 60,
  logger: createSilentLogger(),
  conductorHostname: 'test',
});

describe('qemu power interface: validation', () => {
  it('needs an absolute QMP socket path in driver_info', async () => {
    await expect(power.validate(createTestTask(createTestNode(), []))).rejects.toBeInstanceOf(MissingParameterValue);
    const relative = createTestNode({ driverInfo: { qemu_qmp_socket: 'qmp.sock' } });
    await expect(power.validate(createTestTask(relative, []))).rejects.toBeInstanceOf(InvalidParameterValue);
    expect(Object.keys(power.getProperties())).toEqual(['qemu_qmp_socket']);
  });
});

describe.skipIf(!run)('qemu power interface against a real QEMU machine', () => {
  let dir: string;
  let qemu: ChildProcess;
  let socket: string;

  beforeAll(async () => {
    if (!existsSync(QEMU)) throw new Error(`${QEMU} is missing (test/debian-packages.txt lists what CI=true needs)`);
    dir = mkdtempSync(join(tmpdir(), 'bmaas-qemu-power-'));
    socket = join(dir, 'qmp.sock');
    // A diskless machine that waits powered off (-S) and survives a guest power-off (-no-shutdown).
    qemu = spawn(
      QEMU,
      [
        '-accel',
        'tcg',
        '-m',
        '32',
        '-nodefaults',
        '-display',
        'none',
        '-S',
        '-no-shutdown',
        '-qmp',
        `unix:${socket},server=on,wait=off`,
      ],
      { stdio: 'ignore' },
    );
    await waitFor(
      `the QMP socket ${socket}`,
      until(() => existsSync(socket)),
      { timeoutMs: 10_000, intervalMs: 50 },
    );
  });

  afterAll(async () => {
    if (qemu && qemu.exitCode === null) {
      const exited = new Promise((r) => qemu.once('exit', r));
      qemu.kill('SIGTERM');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const status = () => withQmp(socket, 5000, (qmp) => qmp.execute<{ status: string }>('query-status'));

  it('reads a machine started with -S as powered off, powers it on and off', async () => {
    const node = createTestNode({ powerInterface: 'qemu', driverInfo: { qemu_qmp_socket: socket } });
    const task = () => createTestTask(node, []);
    await power.validate(task());
    expect(await power.getPowerState(task())).toBe(PowerState.OFF);
    expect((await status()).status).toBe('prelaunch');

    await power.setPowerState(task(), PowerState.ON);
    expect((await status()).status).toBe('running');
    expect(await power.getPowerState(task())).toBe(PowerState.ON);
    expect(node.powerState).toBe(PowerState.ON);

    await power.setPowerState(task(), PowerState.ON); // idempotent
    expect((await status()).status).toBe('running');

    await power.setPowerState(task(), PowerState.OFF);
    expect(await power.getPowerState(task())).toBe(PowerState.OFF);
    expect(node.powerState).toBe(PowerState.OFF);

    await power.setPowerState(task(), PowerState.REBOOT);
    expect((await status()).status).toBe('running');
    await power.setPowerState(task(), PowerState.OFF);
  });

  it('powers a machine on again after the guest powered itself off', async () => {
    const node = createTestNode({ powerInterface: 'qemu', driverInfo: { qemu_qmp_socket: socket } });
    await power.setPowerState(createTestTask(node, []), PowerState.ON);
    // What a guest `poweroff -f` does: with -no-shutdown QEMU stays up in the shutdown state.
    await withQmp(socket, 5000, (qmp) => qmp.execute('system_powerdown'));
    await withQmp(socket, 5000, (qmp) => qmp.execute('stop'));
    expect(await power.getPowerState(createTestTask(node, []))).toBe(PowerState.OFF);
    await power.setPowerState(createTestTask(node, []), PowerState.ON);
    expect((await status()).status).toBe('running');
  });
});
