import { InvalidParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { checkRaidConfig } from './raid-config.js';

/** The refusal checkRaidConfig gives, or 'valid'. */
function verdict(config: Record<string, unknown>): string {
  try {
    checkRaidConfig(config);
    return 'valid';
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidParameterValue);
    return (error as Error).message;
  }
}

describe("checkRaidConfig (Ironic's raid_config_schema.json)", () => {
  it('accepts what the schema allows, including JBOD, MAX and an empty object', () => {
    expect(verdict({})).toBe('valid');
    expect(verdict({ logical_disks: [{ size_gb: 'MAX', raid_level: 'JBOD' }] })).toBe('valid');
    const full = {
      size_gb: 100,
      raid_level: '1+0',
      volume_name: 'root',
      is_root_volume: true,
      share_physical_disks: false,
      disk_type: 'ssd',
      interface_type: 'sas',
      number_of_physical_disks: 4,
      controller: 'RAID.Integrated.1-1',
      physical_disks: ['Disk.Bay.0', 'Disk.Bay.1'],
    };
    expect(verdict({ logical_disks: [full, { size_gb: 10, raid_level: '0' }] })).toBe('valid');
  });

  it("refuses with jsonschema's wording, as Ironic does", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ raid: [] }, "'logical_disks' is a required property"],
      [{ logical_disks: [], other: 1 }, "Additional properties are not allowed ('other' was unexpected)"],
      [{ logical_disks: {} }, "{} is not of type 'array'"],
      [{ logical_disks: [] }, '[] should be non-empty'],
      [{ logical_disks: [{ size_gb: 10 }] }, "'raid_level' is a required property"],
      [{ logical_disks: [{ size_gb: 10, raid_level: '7' }] }, "'7' is not one of ['JBOD', '0', '1', '2', '5', '6', '1+0', '5+0', '6+0']"],
      [{ logical_disks: [{ size_gb: 0, raid_level: '1' }] }, '0 is not valid under any of the given schemas'],
      [{ logical_disks: [{ size_gb: 'max', raid_level: '1' }] }, "'max' is not valid under any of the given schemas"],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', disk_type: 'nvme' }] }, "'nvme' is not one of ['hdd', 'ssd']"],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', number_of_physical_disks: 0 }] }, '0 is less than or equal to the minimum of 0'],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', is_root_volume: 'yes' }] }, "'yes' is not of type 'boolean'"],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', a: 1, b: 2 }] }, "Additional properties are not allowed ('a', 'b' were unexpected)"],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', physical_disks: ['d0'] }] }, "'controller' is a dependency of 'physical_disks'"],
      [{ logical_disks: [{ size_gb: 1, raid_level: '1', controller: 'c', physical_disks: [1] }] }, "1 is not of type 'string'"],
    ]; // biome-ignore format: one case a line reads best
    for (const [config, message] of cases) {
      expect(verdict(config), JSON.stringify(config)).toBe(`RAID config validation error: ${message}`);
    }
  });

  it('refuses more than one root volume', () => {
    const root = { size_gb: 10, raid_level: '1', is_root_volume: true };
    expect(verdict({ logical_disks: [root, root] })).toBe(
      'Raid config cannot have more than one root volume. 2 root volumes were specified',
    );
  });
});
