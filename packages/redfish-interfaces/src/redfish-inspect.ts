import type { InspectionData, Inventory, InventoryDisk, InventoryInterface } from '@bmaas/common';
import type { InspectInterface, Task } from '@bmaas/driver-api';
import { bmcName } from './driver-info.js';
import { odataId, type RedfishResource } from './redfish-client.js';
import { RedfishInterfaceBase } from './redfish-interface-base.js';
import { objectAt, RedfishNode } from './redfish-node.js';

/** Processor InstructionSet → the inventory's cpu.architecture (as the agent reports it). */
const ARCHITECTURES: Readonly<Record<string, string>> = {
  'x86-64': 'x86_64',
  x86: 'i686',
  'ARM-A64': 'aarch64',
  'ARM-A32': 'armv7l',
  PowerISA: 'ppc64le',
  MIPS64: 'mips64',
};

/**
 * Ironic's `redfish` inspect interface: the inventory is read out of band
 * from the ComputerSystem and its Processors, Memory summary, Storage (or
 * SimpleStorage) drives and EthernetInterfaces, in the agent's inventory
 * format, so the conductor processes it as an agent's: the same properties
 * (cpus, cpu_arch, memory_mb, local_gb, boot_mode capability), ports for
 * the enabled NICs, the stored inventory, root device hints and rules.
 * Nothing is booted; the machine's power is left as it was.
 */
export class RedfishInspectInterface extends RedfishInterfaceBase implements InspectInterface {
  async inspectHardware(task: Task): Promise<InspectionData> {
    const node = new RedfishNode(this.deps, task.node);
    const { body: system } = await node.system();
    const inventory: Inventory = {
      interfaces: await this.interfaces(node, system),
      cpu: await this.cpu(node, system),
      memory: memoryOf(system),
      disks: await this.disks(node, system),
      system_vendor: {
        manufacturer: stringOr(system.Manufacturer, ''),
        product_name: stringOr(system.Model, ''),
        serial_number: stringOr(system.SerialNumber, ''),
      },
      boot: { current_boot_mode: bootModeOf(system), pxe_interface: null },
      bmc_address: new URL(node.target.origin).hostname.replace(/^\[|\]$/g, ''),
      hostname: typeof system.HostName === 'string' && system.HostName !== '' ? system.HostName : null,
    };
    task.logger.info('inventory read out of band', {
      bmc: bmcName(node.target),
      nics: inventory.interfaces.length,
      disks: inventory.disks?.length ?? 0,
      cpus: inventory.cpu?.count,
    });
    return { inventory, pluginData: { inspected_by: 'redfish' } };
  }

  async continueInspection(_task: Task): Promise<void> {}

  async abortInspection(_task: Task): Promise<void> {}

  /** The system's enabled NICs with a MAC (Status.State Enabled, or no state given). */
  private async interfaces(node: RedfishNode, system: RedfishResource): Promise<InventoryInterface[]> {
    const path = odataId(system.EthernetInterfaces);
    if (!path) return [];
    const nics = await node.client.members(node.target, path);
    return nics
      .filter((nic) => typeof nic.MACAddress === 'string' && nic.MACAddress !== '')
      .filter((nic) => {
        const state = objectAt(nic, 'Status').State;
        return state === undefined || state === 'Enabled';
      })
      .map((nic) => ({
        name: stringOr(nic.Id, stringOr(nic.Name, '')),
        mac_address: (nic.MACAddress as string).toLowerCase(),
        ipv4_address: ipv4Of(nic),
        has_carrier: nic.LinkStatus === undefined ? true : nic.LinkStatus === 'LinkUp',
      }));
  }

  private async cpu(node: RedfishNode, system: RedfishResource): Promise<Inventory['cpu']> {
    const summary = objectAt(system, 'ProcessorSummary');
    const processorsPath = odataId(system.Processors);
    const processors = processorsPath
      ? (await node.client.members(node.target, processorsPath)).filter((p) => p.ProcessorType !== 'GPU')
      : [];
    const first = processors[0] ?? {};
    const threads = processors.reduce((sum, p) => sum + (typeof p.TotalThreads === 'number' ? p.TotalThreads : 0), 0);
    const count =
      typeof summary.LogicalProcessorCount === 'number'
        ? summary.LogicalProcessorCount
        : threads > 0
          ? threads
          : typeof summary.Count === 'number'
            ? summary.Count
            : processors.length;
    const instructionSet = stringOr(first.InstructionSet, 'x86-64');
    return {
      count,
      architecture: ARCHITECTURES[instructionSet] ?? instructionSet,
      model_name: stringOr(first.Model, stringOr(summary.Model, '')),
      ...(typeof first.MaxSpeedMHz === 'number' ? { frequency: String(first.MaxSpeedMHz) } : {}),
    };
  }

  /** Drives of every Storage subsystem; SimpleStorage devices where the system has no Storage. */
  private async disks(node: RedfishNode, system: RedfishResource): Promise<InventoryDisk[]> {
    const disks: InventoryDisk[] = [];
    const storagePath = odataId(system.Storage);
    if (storagePath) {
      for (const storage of await node.client.members(node.target, storagePath)) {
        const drives = Array.isArray(storage.Drives) ? storage.Drives : [];
        for (const link of drives) {
          const path = odataId(link);
          if (!path) continue;
          const drive = await node.client.get(node.target, path);
          if (typeof drive.CapacityBytes !== 'number') continue;
          disks.push({
            name: stringOr(drive.Id, stringOr(drive.Name, path)),
            size: drive.CapacityBytes,
            model: stringOr(drive.Model, '') || null,
            vendor: stringOr(drive.Manufacturer, '') || null,
            serial: stringOr(drive.SerialNumber, '') || null,
            rotational: drive.MediaType === 'HDD',
          });
        }
      }
    }
    const simplePath = odataId(system.SimpleStorage);
    if (disks.length === 0 && simplePath) {
      for (const storage of await node.client.members(node.target, simplePath)) {
        const devices = Array.isArray(storage.Devices) ? (storage.Devices as RedfishResource[]) : [];
        for (const device of devices) {
          if (typeof device.CapacityBytes !== 'number') continue;
          disks.push({
            name: stringOr(device.Name, `disk${disks.length}`),
            size: device.CapacityBytes,
            model: stringOr(device.Model, '') || null,
            vendor: stringOr(device.Manufacturer, '') || null,
          });
        }
      }
    }
    return disks;
  }
}

function memoryOf(system: RedfishResource): Inventory['memory'] {
  const gib = objectAt(system, 'MemorySummary').TotalSystemMemoryGiB;
  if (typeof gib !== 'number' || gib <= 0) return {};
  return { total: Math.round(gib * 1024 ** 3), physical_mb: Math.round(gib * 1024) };
}

function bootModeOf(system: RedfishResource): string | undefined {
  const mode = objectAt(system, 'Boot').BootSourceOverrideMode;
  return mode === 'UEFI' ? 'uefi' : mode === 'Legacy' ? 'bios' : undefined;
}

function ipv4Of(nic: RedfishResource): string | null {
  const addresses = Array.isArray(nic.IPv4Addresses) ? (nic.IPv4Addresses as RedfishResource[]) : [];
  const address = addresses.find((a) => typeof a.Address === 'string' && a.Address !== '')?.Address;
  return typeof address === 'string' ? address : null;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}
