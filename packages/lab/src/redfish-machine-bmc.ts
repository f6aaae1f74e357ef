// A lab machine behind a Redfish BMC: a QEMU machine powered through QMP (qemu.ts,
// powerControlled) and a Redfish service (@bmaas/redfish-bmc) on the host whose one system is
// that machine: power and resets through QMP, the boot override through the machine's boot
// order, its NIC and disk in the inventory. The service runs in this process.
import { randomBytes } from 'node:crypto';
import { readFile, rm, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { ensureCertificate } from '@bmaas/pki';
import {
  type DiskSpec,
  QemuMachineBackend,
  type RedfishBmc,
  type SystemHardware,
  startRedfishBmc,
} from '@bmaas/redfish-bmc';
import {
  MACHINE_DEVICE_IDS,
  type MachineHardware,
  type MachineNetwork,
  type QemuMachine,
  startQemuMachine,
} from './qemu.js';
import { readIfExists } from './wait.js';

export interface RedfishMachineBmcOptions {
  name: string;
  mac: string;
  net: MachineNetwork;
  /** Gets the machine's files (see startQemuMachine); short, for the socket paths. */
  workDir: string;
  /** A raw disk image: the machine's virtio disk, offered as the `Hdd` boot source. */
  disk?: string;
  memoryMb?: number;
  firmware?: 'bios' | 'uefi';
  /** More hardware (CPUs, disks, NICs, serial number): in the machine and in the system's inventory alike. */
  hardware?: MachineHardware;
  /** Where the Redfish service listens (on the host); default 127.0.0.1 and a free port. */
  address?: string;
  port?: number;
  /**
   * HTTPS with a certificate from the CA in this directory (@bmaas/pki: made on first use, one
   * certificate for every lab BMC, naming `address`); the node's `redfish_verify_ca` is the CA's
   * certificate. Without it: plain HTTP.
   */
  pkiDirectory?: string;
  /**
   * Addresses besides loopback the virtual CD may download images from (the lab's: e.g. the
   * address the conductors' HTTP root is reached at from the host).
   */
  mediaHosts?: string[];
}

export interface RedfishMachineBmc {
  readonly name: string;
  readonly mac: string;
  /** The service's base URL (`redfish_address`) and the system's @odata.id (`redfish_system_id`). */
  readonly url: string;
  readonly systemId: string;
  readonly address: string;
  readonly port: number;
  readonly username: string;
  readonly password: string;
  readonly serialLog: string;
  /** The CA certificate that signed the service's certificate (HTTPS), or undefined (HTTP). */
  readonly caFile: string | undefined;
  /** The service, with its control API (faults, health, the system's state). */
  readonly redfish: RedfishBmc;
  readonly machine: QemuMachine;
  /** driver_info of the machine's node (redfish hardware type). */
  driverInfo(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Whether the machine runs (QMP, through the harness's own socket). */
  poweredOn(): Promise<boolean>;
  /** The serial output since the last boot (SeaBIOS/OVMF banner). */
  serialSincePowerOn(): Promise<string>;
  /** Stops the service, then QEMU. */
  stop(): Promise<void>;
}

/** Where a (re)boot starts on the serial console: SeaBIOS's banner, or OVMF's. */
const BOOT_BANNER = /SeaBIOS \(version|BdsDxe: loading|UEFI Interactive Shell|>>Start PXE|>>Start HTTP/g;

export async function startRedfishMachineBmc(options: RedfishMachineBmcOptions): Promise<RedfishMachineBmc> {
  const firmware = options.firmware ?? 'bios';
  const machine = await startQemuMachine({
    name: options.name,
    mac: options.mac,
    net: options.net,
    workDir: options.workDir,
    firmware,
    memoryMb: options.memoryMb,
    disk: options.disk,
    cdDrive: true,
    hardware: options.hardware,
    powerControlled: true,
    qmpSocket: join(options.workDir, `${options.name}.qmp`),
  });
  const diskBytes = options.disk ? (await stat(options.disk)).size : undefined;
  const address = options.address ?? '127.0.0.1';
  const certificate = options.pkiDirectory
    ? ensureCertificate({
        directory: options.pkiDirectory,
        commonName: 'lab-redfish-bmc',
        ...(isIP(address) ? { ipAddresses: [address] } : { dnsNames: [address] }),
      })
    : undefined;
  let redfish: RedfishBmc;
  try {
    redfish = await startRedfishBmc({
      host: address,
      port: options.port ?? 0,
      password: `lab-${randomBytes(6).toString('hex')}`,
      virtualMedia: {
        stateDir: join(options.workDir, `${options.name}.media`),
        allowedHosts: options.mediaHosts ?? [],
      },
      tls: certificate && {
        key: await readFile(certificate.keyFile),
        cert: await readFile(certificate.certFile),
      },
      systems: [
        {
          id: options.name,
          name: options.name,
          power: new QemuMachineBackend({
            qmpSocket: machine.qmpSocket,
            firmware,
            devices: {
              nic: MACHINE_DEVICE_IDS.nic,
              disk: options.disk ? MACHINE_DEVICE_IDS.disk : undefined,
              cdrom: MACHINE_DEVICE_IDS.cdrom,
            },
            uefiHttpBoot: machine.ovmfVars
              ? { varsFile: machine.ovmfVars, restart: (whileStopped) => machine.restart(whileStopped) }
              : undefined,
          }),
          hardware: inventoryOf(options, diskBytes),
        },
      ],
    });
  } catch (error) {
    await machine.stop();
    throw error;
  }
  const url = new URL(redfish.url);
  const systemId = `/redfish/v1/Systems/${options.name}`;

  return {
    name: options.name,
    mac: options.mac,
    url: redfish.url,
    systemId,
    address: url.hostname,
    port: Number(url.port),
    username: redfish.username,
    password: redfish.password,
    serialLog: machine.serialLog,
    caFile: certificate?.caFile,
    redfish,
    machine,
    driverInfo: (overrides = {}) => ({
      redfish_address: redfish.url,
      redfish_system_id: systemId,
      redfish_username: redfish.username,
      redfish_password: redfish.password,
      ...(certificate ? { redfish_verify_ca: certificate.caFile } : {}),
      ...overrides,
    }),
    async poweredOn() {
      const qmp = await machine.qmp();
      const status = await qmp.execute<{ status: string }>('query-status');
      return status.status === 'running' || status.status === 'debug';
    },
    async serialSincePowerOn() {
      const text = await readIfExists(machine.serialLog);
      const starts = [...text.matchAll(BOOT_BANNER)];
      const last = starts.at(-1);
      return last?.index === undefined ? text : text.slice(last.index);
    },
    async stop() {
      await redfish.close();
      await machine.stop();
      await rm(join(options.workDir, `${options.name}.media`), { recursive: true, force: true });
    },
  };
}

/**
 * What the system reports: the machine's QEMU hardware as the guest sees it (qemu.ts): CPUs as
 * cores of one socket, the deploy disk first (vda), then the extra disks in order, the boot
 * NIC, then the extra NICs.
 */
export function inventoryOf(options: RedfishMachineBmcOptions, diskBytes: number | undefined): Partial<SystemHardware> {
  const hardware = options.hardware ?? {};
  const cpus = hardware.cpus ?? 1;
  const disks: DiskSpec[] = [];
  if (diskBytes !== undefined) disks.push({ capacityBytes: diskBytes, serialNumber: `${options.name}-vda` });
  for (const disk of hardware.disks ?? [])
    disks.push({ capacityBytes: disk.sizeMb * 1024 * 1024, serialNumber: disk.serial });
  return {
    model: 'QEMU lab machine',
    serialNumber: hardware.serial ?? `LAB-${options.name}`,
    processors: [{ model: 'QEMU Virtual CPU', cores: cpus, threads: cpus, maxSpeedMHz: 2000 }],
    memoryMiB: [hardware.memoryMb ?? options.memoryMb ?? (options.firmware === 'uefi' ? 512 : 128)],
    nics: [options.mac, ...(hardware.extraMacs ?? [])],
    disks: disks.map((disk, i) => ({
      ...disk,
      id: `vd${String.fromCharCode(97 + i)}`,
      name: `vd${String.fromCharCode(97 + i)}`,
    })),
  };
}
