import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until, waitFor } from '@bmaas/common';

/** The chassis program: src/testing/chassis-model.sh (also used from dist/, which has no copy). */
const CHASSIS_MODEL = fileURLToPath(new URL('../../src/testing/chassis-model.sh', import.meta.url));

export interface SimulatedBmcOptions {
  username?: string;
  password?: string;
  /** Initial power state (default off). */
  powerOn?: boolean;
}

/**
 * One OpenIPMI ipmi_sim process on 127.0.0.1 and a free UDP port, whose
 * chassis (power, boot device) is a file-backed model: a real RMCP+ BMC
 * for tests that need no machine. Stop it with stop() (by its PID).
 */
export class SimulatedBmc {
  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly username: string,
    readonly password: string,
    private process: ChildProcess | undefined,
  ) {}

  static async start(options: SimulatedBmcOptions = {}): Promise<SimulatedBmc> {
    const dir = await mkdtemp(join(tmpdir(), 'bmaas-ipmi-sim-'));
    const port = await freeUdpPort();
    const username = options.username ?? 'admin';
    const password = options.password ?? 'test-pass-1';
    await writeFile(join(dir, 'power'), options.powerOn ? '1\n' : '0\n');
    await writeFile(
      join(dir, 'lan.conf'),
      ipmiSimLanConf({
        name: `test${port}`,
        address: '127.0.0.1',
        port,
        username,
        password,
        chassisControl: `/bin/bash ${CHASSIS_MODEL} ${dir}`,
        guid: port.toString(16).padStart(32, '0'),
      }),
    );
    await writeFile(join(dir, 'temperature'), `${BMC_TEMPERATURE_INITIAL}\n`);
    await writeFile(join(dir, 'bmc.emu'), ipmiSimBmcEmu(join(dir, 'temperature')));
    const bmc = new SimulatedBmc(port, dir, username, password, undefined);
    await bmc.resume();
    return bmc;
  }

  /** driver_info for a node managed by this BMC. */
  driverInfo(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      ipmi_address: '127.0.0.1',
      ipmi_port: this.port,
      ipmi_username: this.username,
      ipmi_password: this.password,
      ipmi_cipher_suite: 3,
      ...overrides,
    };
  }

  /** Power state of the modelled chassis, read directly (not through IPMI). */
  async powerOn(): Promise<boolean> {
    return (await readFile(join(this.dir, 'power'), 'utf8')).trim() === '1';
  }

  async setPower(on: boolean): Promise<void> {
    await writeFile(join(this.dir, 'power'), on ? '1\n' : '0\n');
  }

  async bootDevice(): Promise<string> {
    return existsSync(join(this.dir, 'boot')) ? (await readFile(join(this.dir, 'boot'), 'utf8')).trim() : 'none';
  }

  /** What the BMC's temperature sensor reads from now on (within a second: ipmi_sim polls it). */
  async setTemperature(celsius: number): Promise<void> {
    await writeFile(join(this.dir, 'temperature'), `${Math.round(celsius)}\n`);
  }

  /** Makes the modelled guest honour (or ignore) the ACPI power button. */
  async honourSoftPowerOff(honour: boolean): Promise<void> {
    const flag = join(this.dir, 'soft-honoured');
    if (honour) await writeFile(flag, '');
    else await rm(flag, { force: true });
  }

  /** Chassis calls ipmi_sim made, in order ("get power", "set boot pxe", …). */
  async calls(): Promise<string[]> {
    const log = join(this.dir, 'calls.log');
    return existsSync(log) ? (await readFile(log, 'utf8')).split('\n').filter((l) => l !== '') : [];
  }

  /** Stops answering (the BMC process is stopped; its port stays reserved for resume). */
  async pause(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** (Re)starts ipmi_sim on the same port and waits until it answers. */
  async resume(): Promise<void> {
    await rm(join(this.dir, 'state'), { recursive: true, force: true });
    execFileSync('mkdir', ['-p', join(this.dir, 'state')]);
    const child = spawn(
      'ipmi_sim',
      ['-n', '-c', join(this.dir, 'lan.conf'), '-f', join(this.dir, 'bmc.emu'), '-s', join(this.dir, 'state')],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.process = child;
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    try {
      await waitFor(
        `ipmi_sim to answer on 127.0.0.1:${this.port}`,
        until(() => this.answers()),
        {
          timeoutMs: 30_000,
          abortReason: () => (child.exitCode !== null ? 'ipmi_sim exited' : null),
          describe: () => stderr,
        },
      );
    } catch (error) {
      await this.pause();
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.pause();
    await rm(this.dir, { recursive: true, force: true });
  }

  private answers(): boolean {
    try {
      execFileSync(
        'ipmitool',
        ['-I', 'lanplus', '-H', '127.0.0.1', '-p', String(this.port), '-U', this.username, '-E', '-C', '3'].concat([
          '-R',
          '1',
          '-N',
          '1',
          'power',
          'status',
        ]),
        { stdio: 'ignore', env: { ...process.env, IPMI_PASSWORD: this.password }, timeout: 5000 },
      );
      return true;
    } catch {
      return false;
    }
  }
}

/** True when ipmi_sim and ipmitool are installed (packages openipmi, ipmitool). */
export function ipmiSimAvailable(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v ipmi_sim && command -v ipmitool'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(resolve));
  return port;
}

/** What one ipmi_sim BMC is: its LAN address, its only user, and the program behind its chassis. */
export interface IpmiSimConfig {
  name: string;
  address: string;
  port: number;
  username: string;
  password: string;
  /** The chassis_control command line (power, boot device: see chassis-model.sh). */
  chassisControl: string;
  /** 32 hex digits. */
  guid: string;
}

/**
 * ipmi_sim's lan.conf (man 5 ipmi_lan) for one BMC: RMCP+ on address:port, an admin user,
 * every chassis command sent to `chassisControl`.
 */
export function ipmiSimLanConf(config: IpmiSimConfig): string {
  return `name "${config.name}"
set_working_mc 0x20
  startlan 1
    addr ${config.address} ${config.port}
    priv_limit admin
    allowed_auths_callback md5
    allowed_auths_user md5
    allowed_auths_operator md5
    allowed_auths_admin md5
    guid ${config.guid}
  endlan
  chassis_control "${config.chassisControl}"
  user 1 false "" "" user 10 md5
  user 2 true "${config.username}" "${config.password}" admin 10 md5
`;
}

/** The thresholds (°C) of the simulated BMC's temperature sensor: upper non-critical, critical, non-recoverable. */
export const BMC_TEMPERATURE_THRESHOLDS = { nonCritical: 70, critical: 80, nonRecoverable: 90 } as const;

/** The temperature (°C) the simulated BMC's sensor reads until told otherwise. */
export const BMC_TEMPERATURE_INITIAL = 45;

const hex = (byte: number) => `0x${byte.toString(16).padStart(2, '0')}`;

/**
 * ipmi_sim's command file (man 5 ipmi_sim_cmd): one IPMI 2.0 BMC with a SEL
 * and a temperature sensor, "Temp" (number 1, degrees C, read every half
 * second from `temperatureFile`, a number in ASCII), with upper thresholds
 * BMC_TEMPERATURE_THRESHOLDS: `ipmitool sdr elist` shows it `ok`, `unc`,
 * `ucr` or `unr`. Its SDR is a full sensor record (IPMI 2.0 table 43-1):
 * processor entity, linear, M = 1, so a reading is the byte read.
 */
export function ipmiSimBmcEmu(temperatureFile: string): string {
  const { nonCritical, critical, nonRecoverable } = BMC_TEMPERATURE_THRESHOLDS;
  const name = [...Buffer.from('Temp')];
  const body = [
    ...[0x20, 0x00, 0x01], // owner (the BMC), LUN, sensor number
    ...[0x03, 0x01], // entity: processor 1
    ...[0x67, 0x88], // initialisation, capabilities
    ...[0x01, 0x01], // sensor type temperature, threshold reading type
    ...[0xc0, 0x0f, 0xc0, 0x7f, 0x38, 0x38], // event masks; upper thresholds settable and readable
    ...[0x00, 0x01, 0x00, 0x00], // unsigned, degrees C, no modifier, linear
    ...[0x01, 0x00, 0x00, 0x00, 0x00, 0x00], // M = 1, B = 0, accuracy, exponents
    0x03, // nominal, normal max and min given
    ...[BMC_TEMPERATURE_INITIAL, nonCritical, 0x00, 0xb0, 0x00], // nominal, normal max and min, sensor max and min
    ...[nonRecoverable, critical, nonCritical, 0x00, 0x00, 0x00], // upper, then lower thresholds
    ...[0x00, 0x00, 0x00, 0x00, 0x00], // hysteresis, reserved, OEM
    0xc0 | name.length,
    ...name,
  ];
  const record = [0x00, 0x00, 0x51, 0x01, body.length, ...body].map(hex).join(' ');
  const thresholds = [nonRecoverable, critical, nonCritical].map(hex).join(' ');
  return `mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
sensor_add 0x20 0 1 0x01 0x01 poll 500 file "${temperatureFile}"
main_sdr_add 0x20 ${record}
sensor_set_threshold 0x20 0 1 settable 111000 ${thresholds} 00 00 00
sensor_set_event_support 0x20 0 1 enable scanning per-state 000111111000000 000111111000000 000111111000000 000111111000000
mc_enable 0x20
`;
}
