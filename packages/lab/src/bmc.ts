// A BMC for a lab machine: OpenIPMI's ipmi_sim answering IPMI over LAN (RMCP+, what
// `ipmitool -I lanplus` and the product's ipmitool interfaces speak) on the machine's own
// address, and driving the machine's QEMU through bmc-chassis.sh: power on starts QEMU with
// the boot device last set ("chassis bootdev"), power off stops it. Opt-in per machine; the
// QMP-powered machines of qemu.ts remain for user-mode networking.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ignoreTimeout, until, waitFor } from '@bmaas/common';
import { BMC_TEMPERATURE_INITIAL, ipmiSimBmcEmu, ipmiSimLanConf } from '@bmaas/ipmitool-interfaces/testing';
import { processRunning } from '@bmaas/stack';
import { isRunning, spawned, stopProcess } from './child-process.js';
import { killNow, onAbnormalExit } from './exit-cleanup.js';
import type { LabNetwork } from './netns.js';
import { type MachineNetwork, netdevArg } from './qemu.js';
import { readIfExists } from './wait.js';

const CHASSIS_SCRIPT = fileURLToPath(new URL('../assets/bmc-chassis.sh', import.meta.url));
/** Where the harness marks each power-on in a machine's serial log. */
const POWER_ON_LINE = /^=== power on, bootdev=.*$/gm;

export interface MachineBmcOptions {
  name: string;
  mac: string;
  net: MachineNetwork;
  /** The BMC's IPMI address and UDP port (inside the lab namespace for tap machines on a LabNetwork, else on the host). */
  address: string;
  port: number;
  workDir: string;
  /** A raw disk image (its virtio disk), booted with bootdev "disk". */
  disk?: string;
  memoryMb?: number;
  /**
   * Tap machines: ipmi_sim on the host at `address` (e.g. loopback, where host conductors
   * reach it) while QEMU runs in the lab namespace; default: both inside the namespace.
   */
  bmcOnHost?: boolean;
}

export interface IpmitoolResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface MachineBmc {
  readonly name: string;
  readonly mac: string;
  readonly address: string;
  readonly port: number;
  readonly username: string;
  readonly password: string;
  readonly serialLog: string;
  /** PID of ipmi_sim. */
  readonly pid: number;
  /** driver_info of the machine's node (ipmi_cipher_suite 3: ipmi_sim never answers the cipher suite query). */
  driverInfo(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** ipmitool against this BMC, from where the product runs (the password through the environment, -E). */
  ipmitool(args: readonly string[]): Promise<IpmitoolResult>;
  /** The serial output since the last power on. */
  serialSincePowerOn(): Promise<string>;
  waitForSerialSincePowerOn(pattern: RegExp, timeoutMs: number): Promise<void>;
  /** True while the machine's QEMU runs (it is powered on). */
  machineRunning(): boolean;
  /** The BMC stops answering (SIGSTOP) / answers again (SIGCONT): a hung or unreachable BMC. */
  freeze(): void;
  thaw(): void;
  /** Stops the machine, then ipmi_sim, by PID. */
  stop(): Promise<void>;
}

function networkOf(net: MachineNetwork): LabNetwork | undefined {
  return net.kind === 'tap' ? net.network : undefined;
}

export async function startMachineBmc(options: MachineBmcOptions): Promise<MachineBmc> {
  const dir = join(options.workDir, `${options.name}-bmc`);
  await mkdir(join(dir, 'state'), { recursive: true });
  const serialLog = join(options.workDir, `${options.name}.serial.log`);
  const qmpSocket = join(dir, 'qmp');
  const username = 'admin';
  const password = `e2e-${randomBytes(5).toString('hex')}`;
  const machineNetwork = networkOf(options.net);
  /** Where ipmi_sim runs and ipmitool reaches it: the namespace, or the host. */
  const network = options.bmcOnHost ? undefined : machineNetwork;

  const qemuArgs = [
    ['-name', options.name],
    ['-accel', 'tcg'],
    ['-m', String(options.memoryMb ?? 128)],
    ['-nodefaults', '-no-user-config'],
    ['-display', 'none', '-machine', 'graphics=off'],
    ['-chardev', `file,id=ser0,path=${serialLog},append=on`, '-serial', 'chardev:ser0'],
    ['-qmp', `unix:${qmpSocket},server=on,wait=off`],
    ['-netdev', netdevArg(options.net)],
    ['-device', `virtio-net-pci,netdev=n0,mac=${options.mac}`],
    options.disk ? ['-drive', `file=${options.disk},if=virtio,format=raw`] : [],
  ].flat();
  await writeFile(join(dir, 'qemu.args'), `${qemuArgs.join('\n')}\n`);
  const env = { NAME: options.name, QEMU: 'qemu-system-x86_64', NODE: process.execPath, QMP: qmpSocket };
  await writeFile(
    join(dir, 'machine.env'),
    Object.entries({
      ...env,
      SERIAL: serialLog,
      DEFAULT_ORDER: 'cn',
      NETNS: options.bmcOnHost ? (machineNetwork?.name ?? '') : '',
    })
      .map(([key, value]) => `${key}=${shellQuote(value)}\n`)
      .join(''),
  );
  await writeFile(join(dir, 'bootdev'), 'none\n');
  await writeFile(
    join(dir, 'lan.conf'),
    ipmiSimLanConf({
      name: options.name,
      address: options.address,
      port: options.port,
      username,
      password,
      chassisControl: `/bin/bash ${CHASSIS_SCRIPT} ${dir}`,
      guid: Buffer.from(options.mac).toString('hex').slice(0, 32).padEnd(32, '0'),
    }),
  );
  // The BMC's temperature sensor reads this file: write another number to degrade the node's health.
  await writeFile(join(dir, 'temperature'), `${BMC_TEMPERATURE_INITIAL}\n`);
  await writeFile(join(dir, 'bmc.emu'), ipmiSimBmcEmu(join(dir, 'temperature')));
  if (network) await network.exec('ip', ['addr', 'add', `${options.address}/32`, 'dev', 'lo']);

  const args = ['-n', '-c', join(dir, 'lan.conf'), '-f', join(dir, 'bmc.emu'), '-s', join(dir, 'state')];
  const child: ChildProcess = network
    ? network.spawn('ipmi_sim', args, { stdio: 'ignore' })
    : spawn('ipmi_sim', args, { stdio: 'ignore' });
  const pid = await spawned(child);
  const qemuPid = (): number | undefined => {
    const text = existsSync(join(dir, 'qemu.pid')) ? readFileSync(join(dir, 'qemu.pid'), 'utf8').trim() : '';
    return text ? Number(text) : undefined;
  };
  const forgetCleanup = onAbnormalExit(() => {
    killNow(qemuPid());
    killNow(pid);
  });

  const ipmitool = async (ipmiArgs: readonly string[]): Promise<IpmitoolResult> => {
    const full = [
      ...['-I', 'lanplus', '-H', options.address, '-p', String(options.port), '-U', username, '-E', '-C', '3'],
      ...['-R', '1', '-N', '1', ...ipmiArgs],
    ];
    // The password goes through the environment: it must not show in any process's arguments.
    return network
      ? runStatus('ip', ['netns', 'exec', network.name, 'ipmitool', ...full], password)
      : runStatus('ipmitool', full, password);
  };

  const machineRunning = (): boolean => {
    const qpid = qemuPid();
    return qpid !== undefined && processRunning(qpid);
  };

  const stop = async (): Promise<void> => {
    const qpid = qemuPid();
    if (qpid !== undefined && machineRunning()) {
      try {
        process.kill(qpid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
      // QEMU daemonized (init's child): nothing to await but its /proc entry going
      await waitFor(
        `QEMU of ${options.name} to be gone`,
        until(() => !machineRunning()),
        {
          timeoutMs: 5000,
          intervalMs: 20,
        },
      ).catch(ignoreTimeout);
    }
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone
    }
    await stopProcess(child);
    forgetCleanup();
  };

  // Ready when an RMCP+ session works.
  try {
    await waitFor(
      `BMC of ${options.name} to answer on ${options.address}:${options.port}`,
      until(async () => (await ipmitool(['power', 'status'])).code === 0),
      { timeoutMs: 15_000, intervalMs: 200, abortReason: () => (isRunning(child) ? null : 'ipmi_sim exited') },
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const serialSincePowerOn = async (): Promise<string> => {
    const text = await readIfExists(serialLog);
    const marks = [...text.matchAll(POWER_ON_LINE)];
    const last = marks.at(-1);
    return last?.index === undefined ? text : text.slice(last.index);
  };

  return {
    name: options.name,
    mac: options.mac,
    address: options.address,
    port: options.port,
    username,
    password,
    serialLog,
    pid,
    driverInfo: (overrides = {}) => ({
      ipmi_address: options.address,
      ipmi_port: options.port,
      ipmi_username: username,
      ipmi_password: password,
      ipmi_cipher_suite: 3,
      ...overrides,
    }),
    ipmitool,
    serialSincePowerOn,
    async waitForSerialSincePowerOn(pattern, timeoutMs) {
      await waitFor(
        `${pattern} on the serial console of ${options.name} since the last power on`,
        until(async () => pattern.test(await serialSincePowerOn())),
        { timeoutMs, intervalMs: 500 },
      );
    },
    machineRunning,
    freeze: () => process.kill(pid, 'SIGSTOP'),
    thaw: () => process.kill(pid, 'SIGCONT'),
    stop,
  };
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Runs ipmitool to completion and gives its exit status (its failures are answers here). */
function runStatus(command: string, args: readonly string[], password: string): Promise<IpmitoolResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      [...args],
      { timeout: 30_000, env: { ...process.env, IPMI_PASSWORD: password } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
