import { GIB, type Inventory, validInterfaces } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { interfacesToAdd, portsToDelete, propertiesFromInventory, withCapability } from './inventory-processing.js';

function inventory(overrides: Partial<Inventory> = {}): Inventory {
  return {
    interfaces: [
      { name: 'lo', mac_address: '00:00:00:00:00:00' },
      { name: 'eth0', mac_address: '52:54:00:AA:00:01', ipv4_address: '192.168.77.50' },
      { name: 'eth1', mac_address: '52:54:00:aa:00:02' },
      { name: 'eth2', mac_address: 'not-a-mac' },
    ],
    cpu: { count: 2, architecture: 'x86_64' },
    memory: { total: 512 * 1024 ** 2 - 4096, physical_mb: 512 },
    disks: [
      { name: '/dev/vda', size: 10 * GIB },
      { name: '/dev/vdb', size: 20 * GIB },
    ],
    boot: { current_boot_mode: 'bios', pxe_interface: '01-52-54-00-aa-00-01' },
    ...overrides,
  };
}

describe('inventory processing', () => {
  it('keeps named interfaces with a valid MAC, marks the booting one', () => {
    expect(validInterfaces(inventory())).toEqual([
      { name: 'eth0', mac: '52:54:00:aa:00:01', pxe: true, active: true },
      { name: 'eth1', mac: '52:54:00:aa:00:02', pxe: false, active: false },
    ]);
    // Without pxe_interface every interface counts as bootable, as upstream.
    expect(validInterfaces(inventory({ boot: {} })).every((nic) => nic.pxe)).toBe(true);
  });

  it('adds ports per [inspector]add_ports', () => {
    const nics = validInterfaces(inventory());
    expect(interfacesToAdd(nics, 'all').map((n) => n.name)).toEqual(['eth0', 'eth1']);
    expect(interfacesToAdd(nics, 'pxe').map((n) => n.name)).toEqual(['eth0']);
    expect(interfacesToAdd(nics, 'active').map((n) => n.name)).toEqual(['eth0']);
    expect(interfacesToAdd(nics, 'disabled')).toEqual([]);
  });

  it('deletes ports per [inspector]keep_ports', () => {
    const nics = validInterfaces(inventory());
    const existing = [
      { address: '52:54:00:aa:00:01' },
      { address: '52:54:00:aa:00:02' },
      { address: '52:54:00:ff:ff:ff' },
    ];
    expect(portsToDelete(existing, nics, nics.slice(0, 1), 'all')).toEqual([]);
    expect(portsToDelete(existing, nics, nics.slice(0, 1), 'present')).toEqual(['52:54:00:ff:ff:ff']);
    expect(portsToDelete(existing, nics, nics.slice(0, 1), 'added')).toEqual([
      '52:54:00:aa:00:02',
      '52:54:00:ff:ff:ff',
    ]);
  });

  it('sets cpus, cpu_arch, memory_mb, local_gb from the root disk (less 1 GiB) and the boot mode', () => {
    const node = { properties: { vendor: 'kept', capabilities: 'boot_mode:uefi,foo:bar' }, instanceInfo: {} };
    expect(propertiesFromInventory(inventory(), node)).toEqual({
      vendor: 'kept',
      cpus: 2,
      cpu_arch: 'x86_64',
      memory_mb: 512,
      local_gb: 9,
      capabilities: 'foo:bar,boot_mode:bios',
    });
  });

  it('uses the root device hints for local_gb', () => {
    const node = { properties: { root_device: { size: 20 } }, instanceInfo: {} };
    expect(propertiesFromInventory(inventory(), node).local_gb).toBe(19);
  });

  it('falls back to memory.total and fails without a CPU architecture', () => {
    const node = { properties: {}, instanceInfo: {} };
    expect(propertiesFromInventory(inventory({ memory: { total: 1024 ** 3 } }), node).memory_mb).toBe(1024);
    expect(() => propertiesFromInventory(inventory({ cpu: { count: 1 } }), node)).toThrow(/no CPU architecture/);
  });

  it('sets one capability, keeping the others', () => {
    expect(withCapability(undefined, 'boot_mode', 'uefi')).toBe('boot_mode:uefi');
    expect(withCapability('a:1, boot_mode:bios', 'boot_mode', 'uefi')).toBe('a:1,boot_mode:uefi');
  });
});
