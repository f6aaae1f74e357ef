import {
  type BmaasConfig,
  GIB,
  type InspectedNic,
  type Inventory,
  type InventoryDisk,
  type JsonObject,
  rootDeviceHintsOf,
  selectRootDevice,
} from '@bmaas/common';

export type InspectorConfig = BmaasConfig['inspector'];

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
