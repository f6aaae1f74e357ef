import { InvalidParameterValue } from '@bmaas/common';
import type { RaidConfig } from '../optional-interfaces.js';

const RAID_LEVELS = ['0', '1', '2', '5', '6', '1+0', '5+0', '6+0'];
const DISK_FIELDS: Readonly<Record<string, (value: unknown) => boolean>> = {
  size_gb: (v) => v === 'MAX' || (Number.isInteger(v) && (v as number) > 0),
  raid_level: (v) => typeof v === 'string' && RAID_LEVELS.includes(v),
  volume_name: (v) => typeof v === 'string',
  is_root_volume: (v) => typeof v === 'boolean',
  share_physical_disks: (v) => typeof v === 'boolean',
  disk_type: (v) => v === 'hdd' || v === 'ssd',
  interface_type: (v) => v === 'sata' || v === 'scsi' || v === 'sas',
  number_of_physical_disks: (v) => Number.isInteger(v) && (v as number) >= 1,
  controller: (v) => typeof v === 'string',
  physical_disks: (v) => Array.isArray(v),
};

function invalid(detail: string): InvalidParameterValue {
  return new InvalidParameterValue(`RAID config validation error: ${detail}`);
}

/**
 * Checks a target RAID configuration against Ironic's RAID schema:
 * `{"logical_disks": [{"size_gb": int | "MAX", "raid_level": "0" | "1" | …, …}]}`.
 * An empty object is valid (it clears the target).
 */
export function checkRaidConfig(config: RaidConfig): void {
  const keys = Object.keys(config);
  if (keys.length === 0) return;
  const extra = keys.find((key) => key !== 'logical_disks');
  if (extra) throw invalid(`Additional properties are not allowed ('${extra}' was unexpected)`);
  const disks = config.logical_disks;
  if (!Array.isArray(disks) || disks.length === 0) throw invalid("'logical_disks' must be a non-empty list");
  disks.forEach((disk, index) => {
    if (typeof disk !== 'object' || disk === null || Array.isArray(disk)) {
      throw invalid(`logical_disks[${index}] is not an object`);
    }
    for (const required of ['size_gb', 'raid_level']) {
      if (!(required in disk)) throw invalid(`'${required}' is a required property in logical_disks[${index}]`);
    }
    for (const [field, value] of Object.entries(disk)) {
      const check = DISK_FIELDS[field];
      if (!check) throw invalid(`Additional properties are not allowed ('${field}' was unexpected)`);
      if (!check(value))
        throw invalid(`${JSON.stringify(value)} is not valid for '${field}' in logical_disks[${index}]`);
    }
  });
}
