// A lab BMC: a real ipmi_sim on loopback, asked by ipmitool, powering a real QEMU through
// bmc-chassis.sh. Skipped without ipmi_sim/ipmitool/QEMU, a failure under CI=true.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@bmaas/common';
import { processRunning } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MachineBmc, startMachineBmc } from './bmc.js';

const TOOLS = ['/usr/bin/ipmi_sim', '/usr/bin/ipmitool', '/usr/bin/qemu-system-x86_64'];
const missing = TOOLS.filter((tool) => !existsSync(tool));
const skip = missing.length > 0 && process.env.CI !== 'true';
if (skip) console.warn(`[bmc.test] SKIPPING: missing ${missing.join(', ')} (see test/debian-packages.txt)`);

describe.skipIf(skip)('lab BMC (ipmi_sim on loopback)', () => {
  let dir: string;
  let bmc: MachineBmc;
  const mac = '52:54:00:b3:c0:01';

  /**
   * Power on/off, checked by reading the power state back: ipmitool may report a timeout when
   * QEMU takes over a second to start on a busy machine, although the BMC did what it was asked.
   */
  async function power(state: 'on' | 'off'): Promise<void> {
    await bmc.ipmitool(['power', state]);
    expect(await bmc.ipmitool(['power', 'status'])).toMatchObject({ code: 0, stdout: `Chassis Power is ${state}\n` });
    expect(bmc.machineRunning()).toBe(state === 'on');
  }

  beforeAll(async () => {
    expect(missing, 'ipmi_sim, ipmitool and QEMU are installed').toEqual([]);
    dir = await mkdtemp(join(tmpdir(), 'bmaas-bmc-'));
    bmc = await startMachineBmc({
      name: 'bmc-test',
      mac,
      net: { kind: 'user', forwards: [] },
      address: '127.0.0.1',
      port: await freePort(),
      workDir: dir,
    });
  });
  afterAll(async () => {
    await bmc?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers IPMI over LAN with its own login, the machine powered off', async () => {
    expect(await bmc.ipmitool(['power', 'status'])).toMatchObject({ code: 0, stdout: 'Chassis Power is off\n' });
    expect(bmc.machineRunning()).toBe(false);
    expect(bmc.driverInfo({ deploy_kernel: '/k' })).toEqual({
      ipmi_address: '127.0.0.1',
      ipmi_port: bmc.port,
      ipmi_username: 'admin',
      ipmi_password: bmc.password,
      ipmi_cipher_suite: 3,
      deploy_kernel: '/k',
    });
    // a temperature sensor, read from a file of the BMC's: what a test degrades to make a node unhealthy
    expect((await bmc.ipmitool(['sdr', 'elist'])).stdout).toMatch(/^Temp\s+\| 01h \| ok\s+\|.*\| 45 degrees C$/m);
    await writeFile(join(dir, 'bmc-test-bmc', 'temperature'), '85\n');
    await expect
      .poll(async () => (await bmc.ipmitool(['sdr', 'elist'])).stdout, { timeout: 10_000, interval: 250 })
      .toMatch(/^Temp\s+\| 01h \| ucr\s+\|.*\| 85 degrees C$/m);
    // the password is the BMC's own: not in its configuration's command line
    expect((await readFile(`/proc/${bmc.pid}/cmdline`, 'utf8')).includes(bmc.password)).toBe(false);
  });

  it('powers the machine on with the boot device last set, and off', async () => {
    expect(await bmc.ipmitool(['chassis', 'bootdev', 'pxe'])).toMatchObject({ code: 0 });
    await power('on');
    await bmc.waitForSerialSincePowerOn(/SeaBIOS/, 60_000);
    expect(await bmc.serialSincePowerOn()).toMatch(/^\n?=== power on, bootdev=pxe, order=n ===/);
    const qemuPid = Number(await readFile(join(dir, 'bmc-test-bmc', 'qemu.pid'), 'utf8'));
    const qemuArgs = (await readFile(`/proc/${qemuPid}/cmdline`, 'utf8')).split('\0');
    expect(qemuArgs).toContain(`virtio-net-pci,netdev=n0,mac=${mac}`);
    expect(qemuArgs).toContain('order=n,reboot-timeout=1000');

    await power('off');
    expect(bmc.machineRunning()).toBe(false);
    expect(processRunning(qemuPid)).toBe(false);
  });

  it('the serial output since the last power on leaves out the earlier boots', async () => {
    expect(await bmc.ipmitool(['chassis', 'bootdev', 'disk'])).toMatchObject({ code: 0 });
    await power('on');
    const since = await bmc.serialSincePowerOn();
    expect(since).toMatch(/^\n?=== power on, bootdev=default, order=c ===/);
    expect(since).not.toContain('bootdev=pxe');
    await expect(bmc.waitForSerialSincePowerOn(/never printed/, 600)).rejects.toThrow(
      /timed out after 600 ms waiting for \/never printed\/ on the serial console of .* since the last power on/,
    );
    await power('off');
  });

  it('stops answering while frozen, and answers again once thawed', async () => {
    bmc.freeze();
    try {
      expect((await bmc.ipmitool(['power', 'status'])).code).not.toBe(0);
    } finally {
      bmc.thaw();
    }
    expect(await bmc.ipmitool(['power', 'status'])).toMatchObject({ code: 0 });
  });

  it('stop ends the machine and ipmi_sim', async () => {
    await power('on');
    const qemuPid = Number(await readFile(join(dir, 'bmc-test-bmc', 'qemu.pid'), 'utf8'));
    await bmc.stop();
    expect(processRunning(qemuPid)).toBe(false);
    expect(processRunning(bmc.pid)).toBe(false);
  });
});
