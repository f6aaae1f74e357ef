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
    await writeFile(join(dir, 'bmc.emu'), IPMI_SIM_BMC_EMU);
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

/** ipmi_sim's command file (man 5 ipmi_sim_cmd): one IPMI 2.0 BMC with a SEL. */
export const IPMI_SIM_BMC_EMU = `mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
mc_enable 0x20
`;
