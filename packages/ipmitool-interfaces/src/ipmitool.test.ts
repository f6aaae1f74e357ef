import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger, IPMIFailure, PowerState, PowerStateFailure } from '@bmaas/common';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpmitoolManagementInterface } from './ipmitool-management.js';
import { IpmitoolPowerInterface } from './ipmitool-power.js';
import { IpmitoolRunner, type IpmitoolRunnerOptions } from './ipmitool-runner.js';
import {
  BMC_TEMPERATURE_INITIAL,
  BMC_TEMPERATURE_THRESHOLDS,
  ipmiSimAvailable,
  SimulatedBmc,
} from './testing/ipmi-sim.js';

// Under CI a missing ipmi_sim/ipmitool fails this suite instead of skipping it.
const run = ipmiSimAvailable() || process.env.CI === 'true';

describe.runIf(run)('ipmitool interfaces against a real ipmi_sim BMC', () => {
  let bmc: SimulatedBmc;
  let work: string;
  /** ipmitool behind a wrapper that records each run's arguments, password file mode and timing. */
  let wrapper: string;

  beforeAll(async () => {
    bmc = await SimulatedBmc.start({ password: 'S3cret-pw' });
    work = await mkdtemp(join(tmpdir(), 'bmaas-ipmitool-test-'));
    wrapper = join(work, 'ipmitool');
    const log = join(work, 'runs.log');
    await writeFile(
      wrapper,
      `#!/bin/bash
f=""; prev=""; for a in "$@"; do [ "$prev" = -f ] && f=$a; prev=$a; done
echo "start $(date +%s%3N) mode=$(stat -c %a "$f") args=$*" >> ${log}
ipmitool "$@"; rc=$?
echo "end $(date +%s%3N)" >> ${log}
exit $rc
`,
    );
    await chmod(wrapper, 0o755);
  });
  afterAll(async () => {
    await bmc?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  function runner(overrides: Partial<IpmitoolRunnerOptions> = {}): IpmitoolRunner {
    return new IpmitoolRunner({
      ipmitoolPath: wrapper,
      commandRetryTimeoutMs: 20_000,
      minCommandIntervalMs: 0,
      lanTimeoutSeconds: 1,
      logger: createSilentLogger(),
      ...overrides,
    });
  }
  function taskFor(driverInfo: Record<string, unknown>) {
    const node = createTestNode({ driver: 'ipmi', driverInfo });
    return createTestTask(node, []);
  }
  async function runsLog(): Promise<string[]> {
    return (await readFile(join(work, 'runs.log'), 'utf8')).split('\n').filter((l) => l !== '');
  }

  it('powers on, off and reboots, confirming each change by reading the state back', async () => {
    const power = new IpmitoolPowerInterface({ runner: runner(), powerStateChangeTimeout: 10, pollIntervalMs: 100 });
    const task = taskFor(bmc.driverInfo());
    await bmc.setPower(false);
    expect(await power.getPowerState(task)).toBe(PowerState.OFF);
    await power.setPowerState(task, PowerState.ON);
    expect(await bmc.powerOn()).toBe(true);
    expect(task.node.powerState).toBe(PowerState.ON);
    const before = (await bmc.calls()).length;
    await power.setPowerState(task, PowerState.REBOOT);
    // Reboot = off, confirmed, then on, confirmed.
    expect((await bmc.calls()).slice(before)).toEqual(['set power 0', 'get power', 'set power 1', 'get power']);
    await power.setPowerState(task, PowerState.OFF);
    expect(await bmc.powerOn()).toBe(false);
    expect(task.node.powerState).toBe(PowerState.OFF);
  });

  it('soft power off succeeds when the guest honours it and fails at the power timeout when it does not', async () => {
    const power = new IpmitoolPowerInterface({ runner: runner(), powerStateChangeTimeout: 10, pollIntervalMs: 100 });
    const task = taskFor(bmc.driverInfo());
    await bmc.setPower(true);
    await bmc.honourSoftPowerOff(true);
    await power.setPowerState(task, PowerState.SOFT_POWER_OFF);
    expect(await bmc.powerOn()).toBe(false);
    await bmc.setPower(true);
    await bmc.honourSoftPowerOff(false);
    const error = await power.setPowerState(task, PowerState.SOFT_POWER_OFF, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PowerStateFailure);
    expect((error as Error).message).toMatch(/127\.0\.0\.1:\d+ did not reach "power off" within 1 s/);
    expect(await bmc.powerOn()).toBe(true);
  });

  it('sets the boot device, reads it back, and refuses what the BMC refuses although ipmitool exits 0', async () => {
    const management = new IpmitoolManagementInterface(runner());
    const task = taskFor(bmc.driverInfo());
    await management.setBootDevice(task, 'pxe', false);
    expect(await bmc.bootDevice()).toBe('pxe');
    expect(await management.getBootDevice(task)).toEqual({ bootDevice: 'pxe', persistent: false });
    await management.setBootDevice(task, 'disk', true);
    expect(await bmc.bootDevice()).toBe('default');
    expect((await management.getBootDevice(task)).bootDevice).toBe('disk');
    expect(await management.getSupportedBootDevices(task)).toEqual(['pxe', 'disk', 'cdrom', 'bios', 'safe']);
    // ipmi_sim refuses "safe"; ipmitool prints "... failed: Unspecified error" and exits 0.
    const error = await management.setBootDevice(task, 'safe', false).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IPMIFailure);
    expect((error as Error).message).toMatch(/chassis bootdev safe" to BMC 127\.0\.0\.1:\d+ failed: .*failed/);
    // NMI: this BMC has no diagnostic interrupt; the error says so.
    await expect(management.injectNmi(task)).rejects.toThrow(/power diag" to BMC .* failed: .*Diag failed/);
  });

  it('reads the health from the BMC: its temperature sensor past each threshold, then back', async () => {
    const management = new IpmitoolManagementInterface(runner());
    const task = taskFor(bmc.driverInfo());
    expect(await management.getHealth(task)).toBe('OK');
    const { nonCritical, critical } = BMC_TEMPERATURE_THRESHOLDS;
    try {
      for (const [celsius, health] of [
        [nonCritical + 5, 'Warning'],
        [critical + 5, 'Critical'],
        [BMC_TEMPERATURE_INITIAL, 'OK'],
      ] as const) {
        await bmc.setTemperature(celsius);
        await expect.poll(() => management.getHealth(task), { timeout: 10_000, interval: 200 }).toBe(health);
      }
    } finally {
      await bmc.setTemperature(BMC_TEMPERATURE_INITIAL);
    }
  });

  it('a wrong password fails at once with a message naming the BMC and the credentials, never the password', async () => {
    const power = new IpmitoolPowerInterface({ runner: runner(), powerStateChangeTimeout: 10 });
    const wrong = 'Wr0ng-pass-xyz';
    const error = (await power
      .getPowerState(taskFor(bmc.driverInfo({ ipmi_password: wrong })))
      .catch((e) => e)) as Error;
    expect(error).toBeInstanceOf(IPMIFailure);
    expect(error.message).toContain(`BMC 127.0.0.1:${bmc.port}`);
    expect(error.message).toMatch(/refused the session .* wrong ipmi_username or ipmi_password/);
    // Told apart by ipmitool -v's output, not only by the time (which a busy machine blurs).
    expect(error.message).toContain('(RAKP 2 HMAC is invalid)');
    expect(error.message).not.toContain(wrong);
    // The password went through a 0600 file, never as an argument.
    const runs = await runsLog();
    expect(runs.join('\n')).not.toContain(wrong);
    expect(runs.join('\n')).not.toContain(bmc.password);
    for (const line of runs.filter((l) => l.startsWith('start'))) expect(line).toContain('mode=600');
    // and the file is gone afterwards
    const files = runs.map((l) => /-f (\S+)/.exec(l)?.[1]).filter((f): f is string => f !== undefined);
    for (const file of files) await expect(readFile(file)).rejects.toThrow(/ENOENT/);
  });

  it('a BMC that does not answer fails after about 2 x lan_timeout with a message saying so, not retried', async () => {
    const power = new IpmitoolPowerInterface({ runner: runner({ lanTimeoutSeconds: 1 }), powerStateChangeTimeout: 10 });
    await bmc.pause();
    try {
      const started = Date.now();
      const error = (await power.getPowerState(taskFor(bmc.driverInfo())).catch((e) => e)) as Error;
      const elapsed = Date.now() - started;
      expect(error).toBeInstanceOf(IPMIFailure);
      expect(error.message).toMatch(/no answer within \d+\.\d s, so the BMC is down or unreachable/);
      expect(error.message).toContain('wrong credentials');
      expect(error.message).not.toContain('refused');
      expect(elapsed).toBeGreaterThanOrEqual(1500);
      expect(elapsed).toBeLessThan(15_000);
    } finally {
      await bmc.resume();
    }
  });

  it('kills an ipmitool that outlives command_retry_timeout', async () => {
    // -N 30: ipmitool itself would wait a minute for the hung BMC.
    const power = new IpmitoolPowerInterface({
      runner: runner({ lanTimeoutSeconds: 30, commandRetryTimeoutMs: 1500 }),
      powerStateChangeTimeout: 10,
    });
    await writeFile(join(bmc.dir, 'hang'), '');
    try {
      const started = Date.now();
      await expect(power.getPowerState(taskFor(bmc.driverInfo()))).rejects.toThrow(
        /did not finish within \d+\.\d s and was killed/,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await rm(join(bmc.dir, 'hang'), { force: true });
    }
    // The BMC may still be busy answering the abandoned request: wait until it answers again.
    const again = new IpmitoolPowerInterface({ runner: runner(), powerStateChangeTimeout: 10 });
    await expect
      .poll(
        () =>
          again.getPowerState(taskFor(bmc.driverInfo())).then(
            () => true,
            () => false,
          ),
        {
          timeout: 20_000,
        },
      )
      .toBe(true);
  });

  it('retries a busy BMC within command_retry_timeout, and gives up at that deadline', async () => {
    // A BMC out of sessions cannot be produced with ipmi_sim: this ipmitool answers "busy" for
    // the first BUSY_TIMES runs, then runs the real one against the real BMC.
    const busy = join(work, 'busy-ipmitool');
    const count = join(work, 'busy-count');
    await writeFile(
      busy,
      `#!/bin/bash
# Counted with a rename: a try killed at the deadline leaves the count whole, never an empty file.
n=$(cat ${count} 2>/dev/null || echo 0); echo $((n + 1)) > ${count}.$$ && mv ${count}.$$ ${count}
if [ "$n" -lt "$BUSY_TIMES" ]; then
  echo "\${BUSY_LINE:-Error in open session response message : insufficient resources for session}" >&2
  echo "Error: Unable to establish IPMI v2 / RMCP+ session" >&2
  exit 1
fi
exec ipmitool "$@"
`,
    );
    await chmod(busy, 0o755);
    const task = taskFor(bmc.driverInfo());
    process.env.BUSY_TIMES = '2';
    try {
      await writeFile(count, '0');
      const recovering = runner({ ipmitoolPath: busy, minCommandIntervalMs: 100, commandRetryTimeoutMs: 10_000 });
      const power = new IpmitoolPowerInterface({ runner: recovering, powerStateChangeTimeout: 10 });
      await bmc.setPower(false);
      expect(await power.getPowerState(task)).toBe(PowerState.OFF);
      expect((await readFile(count, 'utf8')).trim()).toBe('3');

      // A late answer to a retransmitted request (a slow BMC on a loaded host) is tried again too.
      process.env.BUSY_LINE = 'IPMI Request Match NOT FOUND';
      await writeFile(count, '0');
      expect(await power.getPowerState(task)).toBe(PowerState.OFF);
      expect((await readFile(count, 'utf8')).trim()).toBe('3');
      delete process.env.BUSY_LINE;

      process.env.BUSY_TIMES = '1000';
      await writeFile(count, '0');
      const hopeless = runner({ ipmitoolPath: busy, minCommandIntervalMs: 200, commandRetryTimeoutMs: 1500 });
      const started = Date.now();
      const error = (await new IpmitoolPowerInterface({ runner: hopeless, powerStateChangeTimeout: 10 })
        .getPowerState(task)
        .catch((e) => e)) as Error;
      expect(error).toBeInstanceOf(IPMIFailure);
      expect(error.message).toMatch(/the BMC stayed busy for \d+ tries .*insufficient resources for session/);
      expect(Date.now() - started).toBeLessThan(5000);
      // Retried at least once (a loaded machine spawns slowly: how many tries fit in 1.5 s varies).
      expect(Number((await readFile(count, 'utf8')).trim())).toBeGreaterThanOrEqual(2);
    } finally {
      delete process.env.BUSY_TIMES;
      delete process.env.BUSY_LINE;
    }
  });

  it('names a busy BMC, not a hang, when the retry deadline cuts its last try short', async () => {
    // Busy at once on the first run, then a run that outlasts command_retry_timeout (as a loaded
    // machine's slow spawn would): the answer is the busy BMC's, not "ipmitool was killed".
    const slow = join(work, 'busy-then-slow-ipmitool');
    const count = join(work, 'busy-then-slow-count');
    await writeFile(
      slow,
      `#!/bin/bash
n=$(cat ${count} 2>/dev/null || echo 0); echo $((n + 1)) > ${count}
if [ "$n" -lt 1 ]; then
  echo "Error in open session response message : insufficient resources for session" >&2
  exit 1
fi
exec sleep 10
`,
    );
    await chmod(slow, 0o755);
    await writeFile(count, '0');
    const cut = runner({ ipmitoolPath: slow, minCommandIntervalMs: 100, commandRetryTimeoutMs: 1500 });
    const error = (await new IpmitoolPowerInterface({ runner: cut, powerStateChangeTimeout: 10 })
      .getPowerState(taskFor(bmc.driverInfo()))
      .catch((e) => e)) as Error;
    expect(error).toBeInstanceOf(IPMIFailure);
    expect(error.message).toMatch(/the BMC stayed busy for 1 tries .*insufficient resources for session/);
    expect((await readFile(count, 'utf8')).trim()).toBe('2');
  });

  it('sends one command at a time per BMC, min_command_interval apart', async () => {
    const shared = runner({ minCommandIntervalMs: 400 });
    const power = new IpmitoolPowerInterface({ runner: shared, powerStateChangeTimeout: 10 });
    const management = new IpmitoolManagementInterface(shared);
    const task = taskFor(bmc.driverInfo());
    const skip = (await runsLog()).length;
    await Promise.all([power.getPowerState(task), management.getBootDevice(task), power.getPowerState(task)]);
    const events = (await runsLog()).slice(skip).map((line) => {
      const [kind, at] = line.split(' ');
      return { kind, at: Number(at) };
    });
    expect(events.map((e) => e.kind)).toEqual(['start', 'end', 'start', 'end', 'start', 'end']);
    for (let i = 2; i < events.length; i += 2) {
      expect((events[i]?.at ?? 0) - (events[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(390);
    }
  });
});
