import { InvalidParameterValue, pythonRepr } from '@bmaas/common';
import type { RaidConfig } from '../optional-interfaces.js';

const RAID_LEVELS = ['JBOD', '0', '1', '2', '5', '6', '1+0', '5+0', '6+0'];
const DISK_TYPES = ['hdd', 'ssd'];
const INTERFACE_TYPES = ['sata', 'scsi', 'sas'];

function invalid(detail: string): InvalidParameterValue {
  return new InvalidParameterValue(`RAID config validation error: ${detail}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isPositiveInteger = (v: unknown) => Number.isInteger(v) && (v as number) > 0;

/** One property of a logical disk: null when valid, else jsonschema's message. */
const DISK_FIELDS: Readonly<Record<string, (value: unknown) => string | null>> = {
  raid_level: (v) =>
    typeof v !== 'string'
      ? `${pythonRepr(v)} is not of type 'string'`
      : RAID_LEVELS.includes(v)
        ? null
        : `${pythonRepr(v)} is not one of ${pythonRepr(RAID_LEVELS)}`,
  size_gb: (v) =>
    v === 'MAX' || isPositiveInteger(v) ? null : `${pythonRepr(v)} is not valid under any of the given schemas`,
  volume_name: (v) => (typeof v === 'string' ? null : `${pythonRepr(v)} is not of type 'string'`),
  is_root_volume: (v) => (typeof v === 'boolean' ? null : `${pythonRepr(v)} is not of type 'boolean'`),
  share_physical_disks: (v) => (typeof v === 'boolean' ? null : `${pythonRepr(v)} is not of type 'boolean'`),
  disk_type: (v) =>
    DISK_TYPES.includes(v as string) ? null : `${pythonRepr(v)} is not one of ${pythonRepr(DISK_TYPES)}`,
  interface_type: (v) =>
    INTERFACE_TYPES.includes(v as string) ? null : `${pythonRepr(v)} is not one of ${pythonRepr(INTERFACE_TYPES)}`,
  number_of_physical_disks: (v) =>
    !Number.isInteger(v)
      ? `${pythonRepr(v)} is not of type 'integer'`
      : (v as number) > 0
        ? null
        : `${pythonRepr(v)} is less than or equal to the minimum of 0`,
  controller: (v) => (typeof v === 'string' ? null : `${pythonRepr(v)} is not of type 'string'`),
  physical_disks: (v) => {
    if (!Array.isArray(v)) return `${pythonRepr(v)} is not of type 'array'`;
    const bad = v.find((disk) => typeof disk !== 'string');
    return bad === undefined ? null : `${pythonRepr(bad)} is not of type 'string'`;
  },
};

function unexpected(keys: string[]): string {
  const names = keys.map(pythonRepr).join(', ');
  return `Additional properties are not allowed (${names} ${keys.length === 1 ? 'was' : 'were'} unexpected)`;
}

/**
 * Checks a target RAID configuration against Ironic's RAID schema
 * (ironic/drivers/raid_config_schema.json) and its one-root-volume rule, with
 * the messages Ironic's jsonschema gives, so scripts matching them carry over:
 * `{"logical_disks": [{"size_gb": int > 0 | "MAX", "raid_level": "JBOD" | "0" | …, …}]}`.
 * An empty object is valid (it clears the target).
 */
export function checkRaidConfig(config: RaidConfig): void {
  if (Object.keys(config).length === 0) return;
  if (!('logical_disks' in config)) throw invalid("'logical_disks' is a required property");
  const extra = Object.keys(config).filter((key) => key !== 'logical_disks');
  if (extra.length > 0) throw invalid(unexpected(extra));
  const disks = config.logical_disks;
  if (!Array.isArray(disks)) throw invalid(`${pythonRepr(disks)} is not of type 'array'`);
  if (disks.length === 0) throw invalid('[] should be non-empty');
  for (const disk of disks) {
    if (!isObject(disk)) throw invalid(`${pythonRepr(disk)} is not of type 'object'`);
    for (const required of ['raid_level', 'size_gb']) {
      if (!(required in disk)) throw invalid(`'${required}' is a required property`);
    }
    const unknown = Object.keys(disk).filter((field) => !(field in DISK_FIELDS));
    if (unknown.length > 0) throw invalid(unexpected(unknown));
    for (const [field, value] of Object.entries(disk)) {
      const message = DISK_FIELDS[field]?.(value);
      if (message) throw invalid(message);
    }
    if ('physical_disks' in disk && !('controller' in disk)) {
      throw invalid("'controller' is a dependency of 'physical_disks'");
    }
  }
  const roots = disks.filter((disk) => (disk as Record<string, unknown>).is_root_volume).length;
  if (roots > 1) {
    throw new InvalidParameterValue(
      `Raid config cannot have more than one root volume. ${roots} root volumes were specified`,
    );
  }
}
