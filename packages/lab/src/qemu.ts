// One emulated machine that network-boots through QEMU's iPXE ROM (Debian ipxe-qemu).
// Always TCG: the /dev/kvm on these hosts cannot run guests.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, copyFileSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QmpClient } from '@bmaas/qemu-power-interface';
import { type ExitStatus, exitOf, isRunning, spawned, stopProcess } from './child-process.js';
import { killNow, onAbnormalExit } from './exit-cleanup.js';
import type { LabNetwork } from './netns.js';
import { readIfExists, tail, waitForFileMatch, waitForPath } from './wait.js';

/** Where a user-mode guest reaches forwarded host services. */
export const GUESTFWD_ADDRESS = '10.0.2.100';
const RELAY_SCRIPT = fileURLToPath(new URL('../assets/socket-relay.mjs', import.meta.url));

/** A host TCP service (on 127.0.0.1) made reachable from a user-mode guest at GUESTFWD_ADDRESS:guestPort. */
export interface GuestForward {
  guestPort: number;
  hostPort: number;
}

export type MachineNetwork =
  /**
   * A tap on the LabNetwork's bridge (DHCP from the lab's dnsmasq); without a network, a tap
   * in the host's own namespace (addHostTap), QEMU running on the host.
   */
  | { kind: 'tap'; network?: LabNetwork; tap: string }
  /** QEMU user-mode networking, restricted: the guest reaches only the forwards. */
  | { kind: 'user'; bootUrl?: string; forwards: GuestForward[]; hostForwards?: GuestForward[] };

/** Where OVMF (Debian `ovmf`) keeps its code and the template of each machine's variable store. */
export const OVMF_CODE = '/usr/share/OVMF/OVMF_CODE_4M.fd';
export const OVMF_VARS_TEMPLATE = '/usr/share/OVMF/OVMF_VARS_4M.fd';

export interface QemuMachineOptions {
  name: string;
  mac: string;
  net: MachineNetwork;
  /**
   * `bios` (default): SeaBIOS and QEMU's iPXE ROM. `uefi`: OVMF on q35 with its own network
   * stack (the NIC's iPXE ROM off), PXE off, so it starts with UEFI HTTP Boot over IPv4.
   */
  firmware?: 'bios' | 'uefi';
  /** Gets <name>.serial.log, <name>.qemu.log (QEMU's own output) and <name>.qmp. Keep it short: socket paths max 107 bytes. */
  workDir: string;
  memoryMb?: number;
  /** Start paused (-S) until a QMP `cont`. */
  paused?: boolean;
  /**
   * A machine the product powers, like a server behind its BMC: it starts
   * powered off (-S), a guest power-off leaves QEMU up in the `shutdown`
   * state (-no-shutdown), so it can be powered on again, and a failed boot
   * reboots and tries again (no -no-reboot). The QMP socket
   * (`qmpSocket`) then belongs to the product's power interface, and the
   * harness watches through a second one, <name>.monitor. Nothing here
   * starts the machine.
   */
  powerControlled?: boolean;
  /** Path of the QMP socket, e.g. the one a node's driver_info.qemu_qmp_socket names; default <workDir>/<name>.qmp. */
  qmpSocket?: string;
  /** A raw disk image, attached as the machine's virtio disk (/dev/vda, BIOS drive 0x80). */
  disk?: string;
  /**
   * An empty CD drive (`MACHINE_DEVICE_IDS.cdrom`), for a BMC to put a virtual CD's image in
   * through QMP (`blockdev-change-medium`): QEMU changes the medium of a drive it has, not
   * the drives it has.
   */
  cdDrive?: boolean;
  /** What inspection reads: CPUs, disks, more NICs, the system serial number. */
  hardware?: MachineHardware;
}

export interface MachineHardware {
  cpus?: number;
  /** Overrides the machine's memoryMb. */
  memoryMb?: number;
  /** virtio-blk disks: sparse raw files <workDir>/<name>.disk<N> of these sizes (MiB), with these serials. */
  disks?: Array<{ sizeMb: number; serial: string }>;
  /** More virtio NICs, on isolated user-mode networks and without a boot ROM. */
  extraMacs?: string[];
  /** SMBIOS system serial number. */
  serial?: string;
}

/** QEMU arguments of a machine's hardware; the disk files must exist (see createDiskFiles). */
export function hardwareArgs(name: string, workDir: string, hardware: MachineHardware = {}): string[] {
  const args: string[] = [];
  if (hardware.cpus) args.push('-smp', String(hardware.cpus));
  for (const [i, disk] of (hardware.disks ?? []).entries()) {
    args.push('-drive', `file=${diskFile(name, workDir, i)},if=none,id=d${i},format=raw`);
    args.push('-device', `virtio-blk-pci,drive=d${i},serial=${disk.serial}`);
  }
  for (const [i, mac] of (hardware.extraMacs ?? []).entries()) {
    args.push('-netdev', `user,id=x${i},restrict=on`, '-device', `virtio-net-pci,netdev=x${i},mac=${mac},romfile=`);
  }
  if (hardware.serial) args.push('-smbios', `type=1,serial=${hardware.serial}`);
  return args;
}

function diskFile(name: string, workDir: string, index: number): string {
  return join(workDir, `${name}.disk${index}`);
}

/** Sparse disk files of the sizes asked for (they take no space until written). */
async function createDiskFiles(name: string, workDir: string, hardware: MachineHardware = {}): Promise<void> {
  for (const [i, disk] of (hardware.disks ?? []).entries()) {
    const file = await open(diskFile(name, workDir, i), 'w');
    await file.truncate(disk.sizeMb * 1024 * 1024);
    await file.close();
  }
}

export interface QemuMachine {
  readonly name: string;
  readonly mac: string;
  readonly pid: number;
  readonly serialLog: string;
  readonly qemuLog: string;
  readonly qmpSocket: string;
  /** The harness's own QMP socket of a powerControlled machine (else the same as qmpSocket). */
  readonly monitorSocket: string;
  /** A UEFI machine's copy of OVMF's variable store (its NVRAM), read by QEMU when it starts. */
  readonly ovmfVars: string | undefined;
  /** The running QEMU's exit (a restart starts another). */
  readonly exited: Promise<ExitStatus>;
  readSerial(): Promise<string>;
  waitForSerial(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** The harness's QMP connection (monitorSocket; opened on first use, closed by stop()). */
  qmp(): Promise<QmpClient>;
  isRunning(): boolean;
  /**
   * Stops QEMU, runs `whileStopped` (e.g. a change of the variable store, which QEMU reads only
   * when it starts), starts it again with the same arguments: a powerControlled machine comes
   * back powered off. The serial log goes on (appended).
   */
  restart(whileStopped?: () => Promise<void>): Promise<void>;
  /** Stops QEMU by PID (SIGTERM, then SIGKILL). */
  stop(): Promise<ExitStatus>;
}

/** QOM ids of a machine's boot NIC, its `disk` and its CD drive (`/machine/peripheral/<id>` in QMP). */
export const MACHINE_DEVICE_IDS = { nic: 'nic0', disk: 'disk0', cdrom: 'cdrom0' } as const;

export function qemuArgs(
  options: QemuMachineOptions,
  files: { serialLog: string; qmpSocket: string; monitorSocket: string; ovmfVars?: string },
): string[] {
  const uefi = options.firmware === 'uefi';
  const flags: string[][] = [
    ['-name', options.name],
    ['-accel', 'tcg'],
    ['-m', String(options.hardware?.memoryMb ?? options.memoryMb ?? (uefi ? 512 : 128))],
    ['-nodefaults', '-no-user-config'],
    // without graphics=off iPXE and Linux stay silent on the serial port
    ['-display', 'none', '-machine', uefi ? 'q35,graphics=off' : 'graphics=off'],
    uefi
      ? [
          '-drive',
          `if=pflash,format=raw,unit=0,readonly=on,file=${OVMF_CODE}`,
          '-drive',
          `if=pflash,format=raw,unit=1,file=${files.ovmfVars}`,
          // UEFI HTTP Boot first: PXE and IPv6 off (a PXE try without a boot file waits ~36 s)
          '-fw_cfg',
          'name=opt/org.tianocore/IPv4PXESupport,string=no',
          '-fw_cfg',
          'name=opt/org.tianocore/IPv6PXESupport,string=no',
          '-fw_cfg',
          'name=opt/org.tianocore/IPv6Support,string=no',
        ]
      : [],
    // appended: a restarted QEMU (restart()) goes on with the same log
    ['-chardev', `file,id=serial0,path=${files.serialLog},append=on`, '-serial', 'chardev:serial0'],
    ['-qmp', `unix:${files.qmpSocket},server=on,wait=off`],
    // QMP serves one client per socket: the harness must not block the power interface's
    files.monitorSocket !== files.qmpSocket ? ['-qmp', `unix:${files.monitorSocket},server=on,wait=off`] : [],
    // network boot only; when it fails SeaBIOS reboots at once instead of hanging (OVMF: bootindex below)
    uefi ? [] : ['-boot', 'order=n,reboot-timeout=0'],
    // -no-reboot turns every guest reboot (boot failure, panic=1) into QEMU exiting. Not for a
    // powerControlled machine: it also turns the power interface's system_reset into a shutdown,
    // and the machine could never be powered on again. Such a machine reboots like a server.
    options.powerControlled ? ['-no-shutdown'] : ['-no-reboot'],
    ['-netdev', netdevArg(options.net)],
    // UEFI: OVMF's own virtio-net driver (an empty romfile), the NIC first in the boot order.
    // The ids (MACHINE_DEVICE_IDS) let a BMC change the boot order through QMP.
    [
      '-device',
      `virtio-net-pci,netdev=n0,mac=${options.mac},id=${MACHINE_DEVICE_IDS.nic}${uefi ? ',romfile=,bootindex=1' : ''}`,
    ],
    options.disk
      ? [
          ...['-drive', `file=${options.disk},if=none,id=${MACHINE_DEVICE_IDS.disk}-drive,format=raw`],
          ...['-device', `virtio-blk-pci,drive=${MACHINE_DEVICE_IDS.disk}-drive,id=${MACHINE_DEVICE_IDS.disk}`],
        ]
      : [],
    options.cdDrive
      ? [
          ...['-drive', `if=none,id=${MACHINE_DEVICE_IDS.cdrom}-drive,media=cdrom,readonly=on`],
          ...['-device', `ide-cd,drive=${MACHINE_DEVICE_IDS.cdrom}-drive,id=${MACHINE_DEVICE_IDS.cdrom}`],
        ]
      : [],
    options.paused || options.powerControlled ? ['-S'] : [],
    hardwareArgs(options.name, options.workDir, options.hardware),
  ];
  return flags.flat();
}

export function netdevArg(net: MachineNetwork): string {
  if (net.kind === 'tap') return `tap,id=n0,ifname=${net.tap},script=no,downscript=no`;
  const parts = ['user', 'id=n0', 'restrict=on'];
  for (const forward of net.forwards) {
    // the cmd: form starts one relay per connection (a plain tcp: target serves only one connection)
    parts.push(
      `guestfwd=tcp:${GUESTFWD_ADDRESS}:${forward.guestPort}-cmd:${process.execPath} ${RELAY_SCRIPT} stdio tcp:127.0.0.1:${forward.hostPort}`,
    );
  }
  // host loopback -> guest port (the agent's command API)
  for (const forward of net.hostForwards ?? []) {
    parts.push(`hostfwd=tcp:127.0.0.1:${forward.hostPort}-:${forward.guestPort}`);
  }
  if (net.bootUrl) parts.push(`bootfile=${net.bootUrl}`);
  // QEMU splits options on commas and runs cmd: through /bin/sh, unquoted
  const bad = parts.find((part) => part.includes(','));
  if (bad) throw new Error(`netdev option QEMU would misparse (comma): ${bad}`);
  if (net.forwards.length > 0 && /\s/.test(process.execPath + RELAY_SCRIPT)) {
    throw new Error(`guestfwd needs paths without spaces: ${process.execPath} ${RELAY_SCRIPT}`);
  }
  return parts.join(',');
}

/** How long QEMU may take to create its QMP sockets (TCG start-up on two busy cores). */
const QMP_SOCKET_TIMEOUT_MS = 60_000;

export async function startQemuMachine(options: QemuMachineOptions): Promise<QemuMachine> {
  const serialLog = join(options.workDir, `${options.name}.serial.log`);
  const qemuLog = join(options.workDir, `${options.name}.qemu.log`);
  const qmpSocket = options.qmpSocket ?? join(options.workDir, `${options.name}.qmp`);
  const monitorSocket = options.powerControlled ? join(options.workDir, `${options.name}.monitor`) : qmpSocket;
  // One copy of OVMF's variable store per machine, as for a real one.
  const ovmfVars = options.firmware === 'uefi' ? join(options.workDir, `${options.name}.vars.fd`) : undefined;
  if (ovmfVars) copyFileSync(OVMF_VARS_TEMPLATE, ovmfVars);
  const args = qemuArgs(options, { serialLog, qmpSocket, monitorSocket, ovmfVars });
  await createDiskFiles(options.name, options.workDir, options.hardware);

  let child: ChildProcess;
  let pid: number;
  let exited: Promise<ExitStatus>;
  let qmp: Promise<QmpClient> | undefined;
  /** A restart is under way: the exit it makes is no failure of the machine. */
  let restarting = false;

  const exitReason = (): string | null => {
    if (restarting || isRunning(child)) return null;
    return `qemu exited (${child.exitCode ?? child.signalCode})`;
  };
  /** Starts QEMU; returns once it listens on its QMP sockets. */
  const launch = async (): Promise<void> => {
    const logFd = openSync(qemuLog, 'a');
    try {
      const stdio = ['ignore', logFd, logFd] as const;
      child =
        options.net.kind === 'tap' && options.net.network
          ? options.net.network.spawn('qemu-system-x86_64', args, { stdio: [...stdio] })
          : spawn('qemu-system-x86_64', args, { stdio: [...stdio] });
    } finally {
      closeSync(logFd);
    }
    const started = await spawned(child);
    pid = started;
    exited = exitOf(child);
    const forgetExitCleanup = onAbnormalExit(() => killNow(started));
    void exited.then(forgetExitCleanup);
    // A powerControlled machine's QMP socket is the product's power interface's from the start:
    // return only once QEMU listens there, or a node verified at once finds no socket (ENOENT)
    // when QEMU starts slowly on a busy machine.
    try {
      for (const socket of new Set([qmpSocket, monitorSocket])) {
        await waitForPath(socket, { timeoutMs: QMP_SOCKET_TIMEOUT_MS, abortReason: exitReason });
      }
    } catch (error) {
      killNow(started);
      throw error;
    }
  };
  await launch();

  return {
    name: options.name,
    mac: options.mac,
    get pid() {
      return pid;
    },
    serialLog,
    qemuLog,
    qmpSocket,
    monitorSocket,
    ovmfVars,
    get exited() {
      return exited;
    },
    readSerial: () => readIfExists(serialLog),
    async waitForSerial(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
      try {
        return await waitForFileMatch(serialLog, pattern, { timeoutMs, abortReason: exitReason });
      } catch (error) {
        const qemuOutput = tail(await readIfExists(qemuLog), 10).trim();
        throw qemuOutput ? new Error(`${(error as Error).message}\nqemu said:\n${qemuOutput}`) : error;
      }
    },
    async qmp() {
      // a closed connection (QEMU restarted on the socket) is opened again
      const open = await qmp?.catch(() => undefined);
      if (open?.closed) qmp = undefined;
      qmp ??= QmpClient.connect(monitorSocket, { waitForSocket: true }).catch((error: Error) => {
        qmp = undefined; // let a later call try again
        throw error;
      });
      return qmp;
    },
    isRunning: () => isRunning(child),
    async restart(whileStopped?: () => Promise<void>): Promise<void> {
      restarting = true;
      try {
        const client = await qmp?.catch(() => undefined);
        client?.close();
        qmp = undefined;
        await stopProcess(child);
        for (const socket of new Set([qmpSocket, monitorSocket])) rmSync(socket, { force: true });
        await whileStopped?.();
      } finally {
        restarting = false;
      }
      await launch();
    },
    async stop(): Promise<ExitStatus> {
      const client = await qmp?.catch(() => undefined);
      client?.close();
      return stopProcess(child);
    },
  };
}
