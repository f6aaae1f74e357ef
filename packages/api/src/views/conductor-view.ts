import { type ConductorRecord, InvalidParameterValue } from '@bmaas/common';
import { selfAndBookmark } from '../links.js';
import { pickFields, timestamp } from './format.js';

export const CONDUCTOR_DEFAULT_FIELDS = ['hostname', 'conductor_group', 'alive'] as const;
export const CONDUCTOR_FIELDS = [
  'hostname',
  'conductor_group',
  'alive',
  'drivers',
  'created_at',
  'updated_at',
  'links',
];

export function checkConductorFields(fields: readonly string[] | undefined): void {
  const unknown = (fields ?? []).filter((f) => !CONDUCTOR_FIELDS.includes(f));
  if (unknown.length > 0) throw new InvalidParameterValue(`Field(s) "${unknown.join(', ')}" are not valid`);
}

export function conductorView(
  conductor: ConductorRecord & { alive: boolean },
  baseUrl: string,
  fields?: readonly string[],
): Record<string, unknown> {
  return pickFields(
    {
      hostname: conductor.hostname,
      conductor_group: conductor.conductorGroup,
      alive: conductor.alive,
      drivers: conductor.drivers,
      created_at: timestamp(conductor.createdAt),
      updated_at: timestamp(conductor.updatedAt),
      links: selfAndBookmark(baseUrl, 'conductors', conductor.hostname),
    },
    fields,
  );
}
