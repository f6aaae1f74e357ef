// A QEMU machine behind a ComputerSystem: power through its QMP socket (the one
// QemuMachinePower), and the boot device chosen at each power on by the machine's boot order:
// the `bootindex` of its devices (QOM ids given here), which QEMU hands the firmware (SeaBIOS
// or OVMF, through fw_cfg `bootorder`) again at every reset.
import { QemuMachinePower, type QmpClient, withQmp } from '@bmaas/qemu-power-interface';
import {
  type BootMode,
  type BootRequest,
  type BootSource,
  type MachinePower,
  type RedfishPowerState,
  type ResetType,
  resetBoots,
} from './machine-power.js';
import { setHttpBootNext } from './uefi-vars.js';
import type { MachineCdDrive } from './virtual-media.js';

export interface QemuBackendOptions {
  /** The machine's QMP socket; the machine runs with `-S -no-shutdown` (see QemuMachinePower). */
  qmpSocket: string;
  /** `bios`: SeaBIOS (Legacy boot mode); `uefi`: OVMF (UEFI). */
  firmware: 'bios' | 'uefi';
  /**
   * QOM ids (`-device …,id=`) of the devices each boot source boots from. `cdrom` is also
   * where the virtual CD's image goes: the machine is started with that CD drive empty
   * (`-drive if=none,media=cdrom,id=… -device ide-cd,drive=…,id=<cdrom>`).
   */
  devices: { nic?: string; disk?: string; cdrom?: string };
  /** The machine's own boot order, used when no override is set; default disk, then network. */
  defaultOrder?: readonly BootSource[];
  /** Bound on one QMP exchange; default 5 s. */
  qmpTimeoutMs?: number;
  /**
   * A UEFI machine's HTTP boot from Boot.HttpBootUri: its OVMF variable store, and how to
   * restart its QEMU with a change made while it is stopped (QEMU reads the store only when it
   * starts; the machine comes back powered off). Without it a `UefiHttp` boot loads the boot
   * file DHCP names.
   */
  uefiHttpBoot?: { varsFile: string; restart(whileStopped: () => Promise<void>): Promise<void> };
}

const RESET_TYPES: readonly ResetType[] = [
  'On',
  'ForceOn',
  'ForceOff',
  'GracefulShutdown',
  'ForceRestart',
  'PowerCycle',
  'PushPowerButton',
  'Nmi',
];

export class QemuMachineBackend implements MachinePower {
  readonly resetTypes = RESET_TYPES;
  readonly bootModes: readonly BootMode[];
  readonly bootSources: readonly BootSource[];
  readonly cdDrive: MachineCdDrive | undefined;
  private readonly machine: QemuMachinePower;
  private readonly defaultOrder: readonly BootSource[];

  constructor(private readonly options: QemuBackendOptions) {
    this.machine = new QemuMachinePower(options.qmpSocket, options.qmpTimeoutMs ?? 5000);
    this.bootModes = [options.firmware === 'uefi' ? 'UEFI' : 'Legacy'];
    const sources: BootSource[] = ['None'];
    if (options.devices.nic) sources.push('Pxe', ...(options.firmware === 'uefi' ? (['UefiHttp'] as const) : []));
    if (options.devices.disk) sources.push('Hdd');
    if (options.devices.cdrom) sources.push('Cd');
    this.bootSources = sources;
    this.defaultOrder = (options.defaultOrder ?? ['Hdd', 'Pxe']).filter((s) => sources.includes(s));
    const cdrom = options.devices.cdrom;
    this.cdDrive = cdrom ? new QemuCdDrive(options.qmpSocket, cdrom, options.qmpTimeoutMs ?? 5000) : undefined;
  }

  async powerState(): Promise<RedfishPowerState> {
    return (await this.machine.isOn()) ? 'On' : 'Off';
  }

  /**
   * A reset that boots sets the boot order first. The order stays: a reboot the guest does by
   * itself boots as the last boot the BMC started (QEMU's firmware reads the order during its
   * start, at no moment QMP reports, so it cannot be set back after a `Once` boot).
   */
  async reset(type: ResetType, boot: BootRequest): Promise<void> {
    const chooseBoot = (qmp: QmpClient) => this.setBootOrder(qmp, boot.target);
    const http = this.options.uefiHttpBoot;
    if (boot.target === 'UefiHttp' && boot.httpBootUri && http && resetBoots(type, await this.powerState())) {
      // BootNext to a boot option of that URI, written while QEMU is stopped: OVMF boots it at
      // its next start, then deletes BootNext (later boots follow the machine's order again).
      const uri = boot.httpBootUri;
      await http.restart(() => setHttpBootNext(http.varsFile, uri));
    }
    switch (type) {
      case 'On':
      case 'ForceOn':
        return this.machine.powerOn(chooseBoot);
      case 'ForceOff':
        return this.machine.powerOff();
      case 'GracefulShutdown':
        return this.machine.pressPowerButton();
      case 'PushPowerButton':
        return (await this.machine.isOn()) ? this.machine.pressPowerButton() : this.machine.powerOn(chooseBoot);
      case 'ForceRestart':
        if (await this.machine.isOn()) await this.machine.reboot(chooseBoot);
        return;
      case 'PowerCycle':
        return this.machine.reboot(chooseBoot);
      case 'Nmi':
        return this.machine.injectNmi();
      default:
        throw new Error(`reset type ${type} is not one this machine carries out`);
    }
  }

  /** The boot order: `target` first (None: the machine's own order), then the rest of the default. */
  private async setBootOrder(qmp: QmpClient, target: BootSource): Promise<void> {
    const first = target === 'None' ? [] : [target];
    const order = [...first, ...this.defaultOrder.filter((s) => s !== target)];
    const ids = [...new Set(order.map((source) => this.deviceOf(source)).filter((id) => id !== undefined))];
    const all = Object.values(this.options.devices).filter((id): id is string => id !== undefined);
    // QEMU refuses two devices with one bootindex: clear them all, then number them in order.
    for (const id of all) await setBootindex(qmp, id, -1);
    for (const [i, id] of ids.entries()) await setBootindex(qmp, id, i + 1);
  }

  private deviceOf(source: BootSource): string | undefined {
    switch (source) {
      case 'Pxe':
      case 'UefiHttp':
        return this.options.devices.nic;
      case 'Hdd':
        return this.options.devices.disk;
      case 'Cd':
        return this.options.devices.cdrom;
      default:
        return undefined;
    }
  }
}

function setBootindex(qmp: QmpClient, id: string, bootindex: number): Promise<unknown> {
  return qmp.execute('qom-set', { path: `/machine/peripheral/${id}`, property: 'bootindex', value: bootindex });
}

/** A QEMU machine's CD drive, its medium changed through QMP as a virtual CD is inserted and ejected. */
export class QemuCdDrive implements MachineCdDrive {
  constructor(
    private readonly qmpSocket: string,
    /** The CD device's QOM id. */
    private readonly device: string,
    private readonly qmpTimeoutMs: number,
  ) {}

  insert(file: string): Promise<void> {
    return withQmp(this.qmpSocket, this.qmpTimeoutMs, async (qmp) => {
      await qmp.execute('blockdev-change-medium', {
        id: this.device,
        filename: file,
        format: 'raw',
        'read-only-mode': 'read-only',
      });
    });
  }

  eject(): Promise<void> {
    return withQmp(this.qmpSocket, this.qmpTimeoutMs, async (qmp) => {
      await qmp.execute('eject', { id: this.device, force: true });
    });
  }
}
