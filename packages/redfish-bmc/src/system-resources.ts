// The resources of one ComputerSystem, rendered from its ManagedSystem: the system itself, its
// processors, memory, NICs, storage (SimpleStorage and Storage with Drives) and BIOS.
import type { ManagedSystem } from './managed-system.js';
import { collection, link, ROOT, resource } from './odata.js';

const GIB = 1024;

export const systemPath = (system: ManagedSystem) => `${ROOT}/Systems/${system.id}`;
export const managerPath = (system: ManagedSystem) => `${ROOT}/Managers/${system.id}`;
export const virtualMediaPath = (system: ManagedSystem) => `${managerPath(system)}/VirtualMedia`;
export const chassisPath = (system: ManagedSystem) => `${ROOT}/Chassis/${system.id}`;

const status = (health: string = 'OK') => ({ State: 'Enabled', Health: health });

export async function computerSystem(system: ManagedSystem): Promise<Record<string, unknown>> {
  const path = systemPath(system);
  const hw = system.hardware;
  const totalMiB = hw.memoryMiB.reduce((sum, size) => sum + size, 0);
  const powerState = await system.powerState();
  const override = system.bootOverride;
  const bios = system.firmwareComponent('BIOS');
  return {
    ...resource('ComputerSystem', path, system.id, system.name),
    SystemType: 'Physical',
    Manufacturer: hw.manufacturer,
    Model: hw.model,
    SerialNumber: hw.serialNumber,
    UUID: system.uuid,
    PowerState: powerState,
    IndicatorLED: system.indicatorLed,
    BiosVersion: bios?.version ?? null,
    Status: { State: 'Enabled', Health: system.health, HealthRollup: system.health },
    Boot: {
      BootSourceOverrideTarget: override.target,
      'BootSourceOverrideTarget@Redfish.AllowableValues': [...system.bootSources],
      BootSourceOverrideEnabled: override.enabled,
      'BootSourceOverrideEnabled@Redfish.AllowableValues': ['Disabled', 'Once', 'Continuous'],
      BootSourceOverrideMode: override.mode,
      'BootSourceOverrideMode@Redfish.AllowableValues': [...system.power.bootModes],
      ...(system.bootSources.includes('UefiHttp') ? { HttpBootUri: override.httpBootUri } : {}),
    },
    ProcessorSummary: {
      Count: hw.processors.length,
      Model: hw.processors[0]?.model ?? null,
      Status: status(),
    },
    MemorySummary: { TotalSystemMemoryGiB: totalMiB / GIB, Status: { ...status(), HealthRollup: 'OK' } },
    Processors: link(`${path}/Processors`),
    Memory: link(`${path}/Memory`),
    EthernetInterfaces: link(`${path}/EthernetInterfaces`),
    SimpleStorage: link(`${path}/SimpleStorage`),
    Storage: link(`${path}/Storage`),
    Bios: link(`${path}/Bios`),
    // where newer Redfish looks for virtual media (the manager's, which sushy reads, is the same)
    ...(system.virtualCd ? { VirtualMedia: link(virtualMediaPath(system)) } : {}),
    Links: {
      Chassis: [link(chassisPath(system))],
      ManagedBy: [link(managerPath(system))],
    },
    Actions: {
      '#ComputerSystem.Reset': {
        target: `${path}/Actions/ComputerSystem.Reset`,
        'ResetType@Redfish.AllowableValues': [...system.power.resetTypes],
      },
    },
  };
}

export function processors(system: ManagedSystem) {
  const path = `${systemPath(system)}/Processors`;
  return collection(
    'ProcessorCollection',
    path,
    'Processors Collection',
    system.hardware.processors.map((_, i) => `${path}/CPU${i}`),
  );
}

export function processor(system: ManagedSystem, id: string) {
  const index = indexOf(id, 'CPU', system.hardware.processors.length);
  const cpu = index === undefined ? undefined : system.hardware.processors[index];
  if (!cpu) return undefined;
  return {
    ...resource('Processor', `${systemPath(system)}/Processors/${id}`, id, `Processor ${index}`),
    Socket: `CPU ${index}`,
    ProcessorType: 'CPU',
    ProcessorArchitecture: 'x86',
    InstructionSet: 'x86-64',
    Manufacturer: 'QEMU',
    Model: cpu.model,
    MaxSpeedMHz: cpu.maxSpeedMHz,
    TotalCores: cpu.cores,
    TotalThreads: cpu.threads,
    Status: status(),
  };
}

export function memoryCollection(system: ManagedSystem) {
  const path = `${systemPath(system)}/Memory`;
  return collection(
    'MemoryCollection',
    path,
    'Memory Collection',
    system.hardware.memoryMiB.map((_, i) => `${path}/DIMM${i}`),
  );
}

export function memory(system: ManagedSystem, id: string) {
  const index = indexOf(id, 'DIMM', system.hardware.memoryMiB.length);
  const size = index === undefined ? undefined : system.hardware.memoryMiB[index];
  if (size === undefined) return undefined;
  return {
    ...resource('Memory', `${systemPath(system)}/Memory/${id}`, id, `DIMM ${index}`),
    MemoryType: 'DRAM',
    MemoryDeviceType: 'DDR4',
    CapacityMiB: size,
    DeviceLocator: `DIMM ${index}`,
    Status: status(),
  };
}

export function ethernetInterfaces(system: ManagedSystem) {
  const path = `${systemPath(system)}/EthernetInterfaces`;
  return collection(
    'EthernetInterfaceCollection',
    path,
    'Ethernet Interface Collection',
    system.hardware.nics.map((_, i) => `${path}/NIC${i}`),
  );
}

export function ethernetInterface(system: ManagedSystem, id: string) {
  const index = indexOf(id, 'NIC', system.hardware.nics.length);
  const mac = index === undefined ? undefined : system.hardware.nics[index];
  if (!mac) return undefined;
  return {
    ...resource('EthernetInterface', `${systemPath(system)}/EthernetInterfaces/${id}`, id, `NIC ${index}`),
    MACAddress: mac,
    PermanentMACAddress: mac,
    SpeedMbps: 1000,
    LinkStatus: 'LinkUp',
    InterfaceEnabled: true,
    Status: status(),
  };
}

const STORAGE_ID = 'Controller0';

export function simpleStorages(system: ManagedSystem) {
  const path = `${systemPath(system)}/SimpleStorage`;
  return collection('SimpleStorageCollection', path, 'Simple Storage Collection', [`${path}/${STORAGE_ID}`]);
}

export function simpleStorage(system: ManagedSystem, id: string) {
  if (id !== STORAGE_ID) return undefined;
  return {
    ...resource('SimpleStorage', `${systemPath(system)}/SimpleStorage/${id}`, id, 'Storage controller'),
    UefiDevicePath: 'PciRoot(0x0)/Pci(0x4,0x0)',
    Status: status(),
    Devices: system.hardware.disks.map((disk, i) => ({
      Name: disk.name ?? `disk${i}`,
      Manufacturer: 'QEMU',
      Model: disk.model ?? 'QEMU HARDDISK',
      CapacityBytes: disk.capacityBytes,
      Status: status(),
    })),
  };
}

export function storages(system: ManagedSystem) {
  const path = `${systemPath(system)}/Storage`;
  return collection('StorageCollection', path, 'Storage Collection', [`${path}/${STORAGE_ID}`]);
}

const driveId = (system: ManagedSystem, i: number) => system.hardware.disks[i]?.id ?? `disk${i}`;

export function storage(system: ManagedSystem, id: string) {
  if (id !== STORAGE_ID) return undefined;
  const path = `${systemPath(system)}/Storage/${id}`;
  return {
    ...resource('Storage', path, id, 'Storage controller'),
    Status: status(),
    StorageControllers: [
      {
        '@odata.id': `${path}#/StorageControllers/0`,
        MemberId: '0',
        Name: 'virtio-blk',
        Status: status(),
        SupportedControllerProtocols: ['PCIe'],
        SupportedDeviceProtocols: [...new Set(system.hardware.disks.map((disk) => disk.protocol ?? 'SATA'))],
      },
    ],
    'Drives@odata.count': system.hardware.disks.length,
    Drives: system.hardware.disks.map((_, i) => link(`${path}/Drives/${driveId(system, i)}`)),
  };
}

export function drive(system: ManagedSystem, storageId: string, id: string) {
  if (storageId !== STORAGE_ID) return undefined;
  const index = system.hardware.disks.findIndex((_, i) => driveId(system, i) === id);
  const disk = system.hardware.disks[index];
  if (!disk) return undefined;
  return {
    ...resource('Drive', `${systemPath(system)}/Storage/${storageId}/Drives/${id}`, id, disk.name ?? id),
    Manufacturer: 'QEMU',
    Model: disk.model ?? 'QEMU HARDDISK',
    SerialNumber: disk.serialNumber,
    CapacityBytes: disk.capacityBytes,
    MediaType: disk.mediaType ?? 'HDD',
    Protocol: disk.protocol ?? 'SATA',
    Status: status(),
  };
}

export function bios(system: ManagedSystem) {
  const path = `${systemPath(system)}/Bios`;
  const settings: Record<string, unknown> = {
    '@odata.type': '#Settings.v1_3_0.Settings',
    SettingsObject: link(`${path}/Settings`),
    SupportedApplyTimes: ['OnReset'],
  };
  if (system.biosAppliedAt) settings.Time = system.biosAppliedAt;
  return {
    ...resource('Bios', path, 'BIOS', 'BIOS Configuration Current Settings'),
    AttributeRegistry: system.biosRegistryId,
    Attributes: { ...system.biosAttributes },
    '@Redfish.Settings': settings,
    Actions: {
      '#Bios.ResetBios': { target: `${path}/Actions/Bios.ResetBios` },
      '#Bios.ChangePassword': { target: `${path}/Actions/Bios.ChangePassword` },
    },
  };
}

/** The settings resource: the attributes pending until the next boot. */
export function biosSettings(system: ManagedSystem) {
  return {
    ...resource('Bios', `${systemPath(system)}/Bios/Settings`, 'Settings', 'BIOS Configuration Pending Settings'),
    AttributeRegistry: system.biosRegistryId,
    Attributes: { ...system.pendingBios },
    '@Redfish.SettingsApplyTime': {
      '@odata.type': '#Settings.v1_3_0.PreferredApplyTime',
      ApplyTime: 'OnReset',
      'ApplyTime@Redfish.AllowableValues': ['OnReset'],
    },
  };
}

/** `CPU3` -> 3 when 3 < count. */
function indexOf(id: string, prefix: string, count: number): number | undefined {
  const match = new RegExp(`^${prefix}(\\d+)$`).exec(id);
  const index = match ? Number(match[1]) : Number.NaN;
  return Number.isInteger(index) && index < count ? index : undefined;
}

/** ComputerSystem properties a PATCH may name but not change (PropertyNotWritable, not PropertyUnknown). */
export const READ_ONLY_SYSTEM_PROPERTIES = new Set([
  'Id',
  'Name',
  'SystemType',
  'Manufacturer',
  'Model',
  'SerialNumber',
  'UUID',
  'PowerState',
  'BiosVersion',
  'Status',
  'ProcessorSummary',
  'MemorySummary',
]);
