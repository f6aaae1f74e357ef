import {
  type BmaasConfig,
  GIB,
  type Inventory,
  type InventoryDisk,
  type InventoryInterface,
  type JsonObject,
  rootDeviceHintsOf,
  selectRootDevice,
  tryParseMac,
} from '@bmaas/common';

export type InspectorConfig = BmaasConfig['inspector'];

/** An interface of the inventory that may become a port. */
export interface InspectedNic {
  name: string;
  mac: string;
  /** The machine booted the ramdisk from it (inventory.boot.pxe_interface). */
  pxe: boolean;
  active: boolean;
}

/** What upstream's validate-interfaces hook keeps: named interfaces with a valid, non-zero MAC, loopback dropped. */
export function validInterfaces(inventory: Inventory): InspectedNic[] {
  const pxeMac = pxeMacOf(inventory);
  const nics: InspectedNic[] = [];
  for (const item of inventory.interfaces as InventoryInterface[]) {
    const mac = typeof item.mac_address === 'string' ? tryParseMac(item.mac_address) : undefined;
    if (!item.name || item.name === 'lo' || mac === undefined || mac === '00:00:00:00:00:00') continue;
    nics.push({
      name: item.name,
      mac,
      pxe: pxeMac === undefined || mac === pxeMac,
      active: Boolean(item.ipv4_address || item.ipv6_address),
    });
  }
  return nics;
}

/** The booting NIC's MAC (BOOTIF may come as 01-aa-bb-…), or undefined when the ramdisk did not say. */
export function pxeMacOf(inventory: Inventory): string | undefined {
  const value = inventory.boot?.pxe_interface;
  if (typeof value !== 'string' || value === '') return undefined;
  const text = /^01-([0-9a-f]{2}-){5}[0-9a-f]{2}$/i.test(value) ? value.slice(3) : value;
  return tryParseMac(text);
}

/** [inspector]add_ports: which of the valid interfaces get a port. */
export function interfacesToAdd(nics: readonly InspectedNic[], addPorts: InspectorConfig['add_ports']): InspectedNic[] {
  switch (addPorts) {
    case 'all':
      return [...nics];
    case 'active':
      return nics.filter((nic) => nic.active);
    case 'pxe':
      return nics.filter((nic) => nic.pxe);
    default:
      return [];
  }
}

/**
 * [inspector]keep_ports: which existing ports (by MAC) to delete after
 * inspection. `present`: those whose MAC the inventory does not list;
 * `added`: every port but the ones inspection added or found.
 */
export function portsToDelete(
  existing: readonly { address: string }[],
  nics: readonly InspectedNic[],
  added: readonly InspectedNic[],
  keepPorts: InspectorConfig['keep_ports'],
): string[] {
  if (keepPorts === 'all') return [];
  const keep = new Set((keepPorts === 'present' ? nics : added).map((nic) => nic.mac));
  return existing.filter((port) => !keep.has(port.address)).map((port) => port.address);
}

/** The root disk of an inventory by the node's hints (or the agent's default choice). */
export function rootDiskOf(
  inventory: Inventory,
  node: { properties: JsonObject; instanceInfo: JsonObject },
): InventoryDisk | undefined {
  return selectRootDevice(inventory.disks ?? [], rootDeviceHintsOf(node));
}

/**
 * Node properties read from an inventory: cpus, cpu_arch, memory_mb,
 * local_gb (root disk GiB less one, kept for partitioning, as upstream) and
 * the boot mode as the `boot_mode` capability. Throws when the inventory has
 * no CPU architecture (upstream's architecture hook fails the same way).
 */
export function propertiesFromInventory(
  inventory: Inventory,
  node: { properties: JsonObject; instanceInfo: JsonObject },
): JsonObject {
  const arch = inventory.cpu?.architecture;
  if (typeof arch !== 'string' || arch === '') {
    throw new Error('the inventory has no CPU architecture (cpu.architecture)');
  }
  const properties: JsonObject = { ...node.properties, cpu_arch: arch };
  const cpus = inventory.cpu?.count;
  if (typeof cpus === 'number' && cpus > 0) properties.cpus = cpus;
  const memoryMb = memoryMbOf(inventory);
  if (memoryMb !== undefined) properties.memory_mb = memoryMb;
  const root = rootDiskOf(inventory, node);
  if (root) properties.local_gb = Math.max(0, Math.floor(root.size / GIB) - 1);
  const bootMode = inventory.boot?.current_boot_mode;
  if (bootMode === 'uefi' || bootMode === 'bios') {
    properties.capabilities = withCapability(properties.capabilities, 'boot_mode', bootMode);
  }
  return properties;
}

function memoryMbOf(inventory: Inventory): number | undefined {
  const physical = inventory.memory?.physical_mb;
  if (typeof physical === 'number' && physical > 0) return Math.floor(physical);
  const total = inventory.memory?.total;
  if (typeof total === 'number' && total > 0) return Math.floor(total / 1024 ** 2);
  return undefined;
}

/** Ironic's capabilities string "k1:v1,k2:v2" with one key set. */
export function withCapability(capabilities: unknown, key: string, value: string): string {
  const pairs = (typeof capabilities === 'string' ? capabilities.split(',') : [])
    .map((pair) => pair.trim())
    .filter((pair) => pair !== '' && pair.split(':')[0] !== key);
  return [...pairs, `${key}:${value}`].join(',');
}
