import { describe, expect, it } from 'vitest';
import { InvalidParameterValue } from '../errors.js';
import { GIB, type InventoryDisk } from './inventory.js';
import { hintsPinning, parseRootDeviceHints, rootDeviceHintsOf, selectRootDevice } from './root-device-hints.js';

const DISKS: InventoryDisk[] = [
  { name: '/dev/vda', size: 10 * GIB, model: 'QEMU HARDDISK', serial: 'disk-a', rotational: true, wwn: '0x5000c5001' },
  {
    name: '/dev/vdb',
    size: 20 * GIB + 12345,
    model: 'Fast SSD',
    vendor: 'ACME',
    serial: 'disk-b',
    rotational: false,
    by_path: '/dev/disk/by-path/pci-0000:00:05.0',
  },
  { name: '/dev/sdc', size: 2 * GIB, serial: 'tiny' },
];

describe('root device selection', () => {
  it('without hints takes the smallest disk of at least 4 GiB', () => {
    expect(selectRootDevice(DISKS)?.name).toBe('/dev/vda');
    expect(selectRootDevice(DISKS, {})?.name).toBe('/dev/vda');
  });

  it('picks by size in GiB (rounded down), with or without an operator', () => {
    expect(selectRootDevice(DISKS, { size: 20 })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { size: '>= 15' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { size: '< 5' })?.name).toBe('/dev/sdc');
    expect(selectRootDevice(DISKS, { size: 30 })).toBeUndefined();
  });

  it('picks by name (with or without /dev/), serial, wwn, model, vendor, rotational, by_path; all hints must match', () => {
    expect(selectRootDevice(DISKS, { name: 'vdb' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { name: '/dev/vdb' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { serial: 'disk-b' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { wwn: '0x5000c5001' })?.name).toBe('/dev/vda');
    expect(selectRootDevice(DISKS, { model: 'fast ssd' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { model: '<in> ssd' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { vendor: 'acme' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { rotational: false, size: 20 })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { rotational: 'true' })?.name).toBe('/dev/vda');
    expect(selectRootDevice(DISKS, { by_path: '/dev/disk/by-path/pci-0000:00:05.0' })?.name).toBe('/dev/vdb');
    expect(selectRootDevice(DISKS, { serial: 'disk-b', size: 10 })).toBeUndefined();
  });

  it('refuses malformed hints with InvalidParameterValue naming the problem', () => {
    const refusal = (hints: unknown) => {
      try {
        parseRootDeviceHints(hints);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidParameterValue);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal('sda')).toMatch(/must be an object/);
    expect(refusal({ colour: 'red' })).toMatch(/unknown hints colour/);
    expect(refusal({ size: -1 })).toMatch(/size must be a positive integer/);
    expect(refusal({ size: 'big' })).toMatch(/size must be a positive integer/);
    expect(refusal({ size: 1.5 })).toMatch(/size must be a positive integer/);
    expect(refusal({ rotational: 'sometimes' })).toMatch(/rotational must be a boolean/);
    expect(refusal({ serial: '' })).toMatch(/serial must be a non-empty string/);
  });

  it('takes instance_info.root_device over properties.root_device', () => {
    expect(rootDeviceHintsOf({ properties: { root_device: { size: 10 } }, instanceInfo: {} })).toEqual({ size: 10 });
    expect(
      rootDeviceHintsOf({ properties: { root_device: { size: 10 } }, instanceInfo: { root_device: { size: 20 } } }),
    ).toEqual({ size: 20 });
  });

  it('pins the chosen disk for the agent by its most stable identifier, and the pin selects it again', () => {
    const chosen = selectRootDevice(DISKS, { size: 20 });
    expect(chosen?.name).toBe('/dev/vdb');
    expect(hintsPinning(chosen as InventoryDisk)).toEqual({ serial: 'disk-b' });
    expect(hintsPinning(DISKS[0] as InventoryDisk)).toEqual({ wwn: '0x5000c5001' });
    expect(hintsPinning({ name: '/dev/sdz', size: GIB })).toEqual({ name: '/dev/sdz' });
    for (const disk of DISKS) expect(selectRootDevice(DISKS, hintsPinning(disk))).toBe(disk);
  });
});
