import type { BiosSetting, FirmwareComponent } from '@bmaas/common';
import type { Knex } from 'knex';

/** A cached row with its times, as the API shows them. */
export type Timed<T> = T & { createdAt: Date; updatedAt: Date | null };

/**
 * SQL for what a conductor caches of a node's hardware: its BIOS settings
 * (bios_settings) and firmware components (firmware_information). Each cache
 * is replaced as a whole, in one transaction: rows of names no longer
 * reported go, the others are updated or inserted (their created_at kept).
 */
export class HardwareSettingsStore {
  constructor(private readonly db: Knex) {}

  async replaceBiosSettings(nodeId: number, settings: readonly BiosSetting[]): Promise<void> {
    await this.db.transaction(async (trx) => {
      const names = settings.map((s) => s.name);
      await trx('bios_settings')
        .where({ node_id: nodeId })
        .modify((q) => {
          if (names.length > 0) q.whereNotIn('name', names);
        })
        .delete();
      if (settings.length === 0) return;
      await trx('bios_settings')
        .insert(settings.map((s) => ({ node_id: nodeId, ...biosRow(s) })))
        .onConflict(['node_id', 'name'])
        .merge({
          ...Object.fromEntries(BIOS_COLUMNS.map((column) => [column, trx.raw('excluded.??', [column])])),
          updated_at: trx.fn.now(),
        });
    });
  }

  async listBiosSettings(nodeId: number): Promise<Timed<BiosSetting>[]> {
    const rows = await this.db('bios_settings').where({ node_id: nodeId }).orderBy('name');
    return rows.map(biosOf);
  }

  async getBiosSetting(nodeId: number, name: string): Promise<Timed<BiosSetting> | undefined> {
    const row = await this.db('bios_settings').where({ node_id: nodeId, name }).first();
    return row ? biosOf(row) : undefined;
  }

  async replaceFirmwareComponents(nodeId: number, components: readonly FirmwareComponent[]): Promise<void> {
    await this.db.transaction(async (trx) => {
      const names = components.map((c) => c.component);
      await trx('firmware_information')
        .where({ node_id: nodeId })
        .modify((q) => {
          if (names.length > 0) q.whereNotIn('component', names);
        })
        .delete();
      for (const c of components) {
        const row = {
          current_version: c.currentVersion,
          last_version_flashed: c.lastVersionFlashed,
          vendor: c.vendor,
          model: c.model,
          serial_number: c.serialNumber,
        };
        // initial_version is the first version seen, kept across later caches (as upstream).
        await trx('firmware_information')
          .insert({ node_id: nodeId, component: c.component, initial_version: c.initialVersion, ...row })
          .onConflict(['node_id', 'component'])
          .merge({ ...row, updated_at: trx.fn.now() });
      }
    });
  }

  async listFirmwareComponents(nodeId: number): Promise<Timed<FirmwareComponent>[]> {
    const rows = await this.db('firmware_information').where({ node_id: nodeId }).orderBy('component');
    return rows.map((row) => ({
      component: row.component,
      initialVersion: row.initial_version,
      currentVersion: row.current_version,
      lastVersionFlashed: row.last_version_flashed,
      vendor: row.vendor,
      model: row.model,
      serialNumber: row.serial_number,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }));
  }
}

/** The columns a new cache of a setting replaces. */
const BIOS_COLUMNS = [
  'value',
  'attribute_type',
  'allowable_values',
  'lower_bound',
  'upper_bound',
  'min_length',
  'max_length',
  'read_only',
  'reset_required',
  'unique',
] as const;

function biosRow(s: BiosSetting): Record<string, unknown> {
  return {
    name: s.name,
    value: s.value,
    attribute_type: s.attributeType,
    allowable_values: s.allowableValues === null ? null : JSON.stringify(s.allowableValues),
    lower_bound: s.lowerBound,
    upper_bound: s.upperBound,
    min_length: s.minLength,
    max_length: s.maxLength,
    read_only: s.readOnly,
    reset_required: s.resetRequired,
    unique: s.unique,
  };
}

function biosOf(row: Record<string, unknown>): Timed<BiosSetting> {
  const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    name: row.name as string,
    value: (row.value as string | null) ?? null,
    attributeType: (row.attribute_type as string | null) ?? null,
    allowableValues: (row.allowable_values as string[] | null) ?? null,
    lowerBound: number(row.lower_bound),
    upperBound: number(row.upper_bound),
    minLength: number(row.min_length),
    maxLength: number(row.max_length),
    readOnly: (row.read_only as boolean | null) ?? null,
    resetRequired: (row.reset_required as boolean | null) ?? null,
    unique: (row.unique as boolean | null) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: (row.updated_at as Date | null) ?? null,
  };
}
