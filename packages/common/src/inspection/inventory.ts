import { InvalidParameterValue } from '../errors.js';
import { tryParseMac } from '../mac.js';

/**
 * The hardware inventory an inspection ramdisk posts (ironic-python-agent's
 * shape; docs/inspection.md). Only what the product reads is typed; the rest
 * is stored as sent.
 */
export interface InventoryInterface {
  name: string;
  mac_address: string;
  ipv4_address?: string | null;
  ipv6_address?: string | null;
  has_carrier?: boolean;
  [key: string]: unknown;
}

export interface InventoryDisk {
  name: string;
  /** Bytes. */
  size: number;
  model?: string | null;
  vendor?: string | null;
  serial?: string | null;
  wwn?: string | null;
  wwn_with_extension?: string | null;
  wwn_vendor_extension?: string | null;
  rotational?: boolean;
  hctl?: string | null;
  by_path?: string | null;
  tran?: string | null;
  [key: string]: unknown;
}

export interface Inventory {
  interfaces: InventoryInterface[];
  cpu?: { count?: number; architecture?: string; model_name?: string; [key: string]: unknown };
  memory?: { total?: number; physical_mb?: number };
  disks?: InventoryDisk[];
  bmc_address?: string | null;
  bmc_v6address?: string | null;
  system_vendor?: { product_name?: string; serial_number?: string; manufacturer?: string; [key: string]: unknown };
  boot?: { current_boot_mode?: string; pxe_interface?: string | null };
  hostname?: string | null;
  [key: string]: unknown;
}

/** GiB in bytes, the unit of local_gb and of the size root device hint. */
export const GIB = 1024 ** 3;

/** What POST /v1/continue_inspection carries: the inventory, and the rest (plugin data). */
export interface InspectionData {
  inventory: Inventory;
  pluginData: Record<string, unknown>;
}

/**
 * Checks a continue_inspection body as the API must: an object whose
 * `inventory.interfaces` has at least one item, each with a `mac_address`.
 * Everything but `inventory` (and the ramdisk `logs`, which are not kept)
 * becomes the plugin data. Throws InvalidParameterValue.
 */
export function checkInspectionBody(body: unknown): InspectionData {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidParameterValue('The inspection data must be a JSON object.');
  }
  const { inventory, logs: _logs, ...pluginData } = body as Record<string, unknown>;
  if (typeof inventory !== 'object' || inventory === null || Array.isArray(inventory)) {
    throw new InvalidParameterValue('The inspection data has no inventory.');
  }
  const interfaces = (inventory as Record<string, unknown>).interfaces;
  if (!Array.isArray(interfaces) || interfaces.length === 0) {
    throw new InvalidParameterValue('The inventory must list at least one network interface.');
  }
  for (const item of interfaces) {
    if (
      typeof item !== 'object' ||
      item === null ||
      typeof (item as Record<string, unknown>).mac_address !== 'string'
    ) {
      throw new InvalidParameterValue('Every interface of the inventory needs a mac_address.');
    }
  }
  return { inventory: inventory as Inventory, pluginData };
}

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
