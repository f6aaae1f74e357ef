import type { Knex } from 'knex';
import * as initialSchema from './20261130000000_initial_schema.js';
import * as nodeApiParity from './20261201000000_node_api_parity.js';
import * as resources from './20261201000100_resources.js';
import * as deployCleanSteps from './20261201000200_deploy_clean_steps.js';
import * as inspection from './20261201000300_inspection.js';
import * as bootPathChanges from './20261201000500_boot_path_changes.js';
import * as nodesHotUpdates from './20261202000000_nodes_hot_updates.js';
import * as api97To115 from './20261204000000_api_1_97_to_1_115.js';
import * as inspectionRules from './20261204000100_inspection_rules.js';
import * as allocationConductorAffinity from './20261205000000_allocation_conductor_affinity.js';
import * as biosFirmware from './20261205000200_bios_firmware.js';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Every migration, in order. Listed here rather than read from a folder so
 * that the same list works from TypeScript sources and compiled output.
 */
const MIGRATIONS: ReadonlyArray<[string, Migration]> = [
  ['20261130000000_initial_schema', initialSchema],
  ['20261201000000_node_api_parity', nodeApiParity],
  ['20261201000100_resources', resources],
  ['20261201000200_deploy_clean_steps', deployCleanSteps],
  ['20261201000300_inspection', inspection],
  ['20261201000500_boot_path_changes', bootPathChanges],
  ['20261202000000_nodes_hot_updates', nodesHotUpdates],
  ['20261204000000_api_1_97_to_1_115', api97To115],
  ['20261204000100_inspection_rules', inspectionRules],
  ['20261205000000_allocation_conductor_affinity', allocationConductorAffinity],
  ['20261205000200_bios_firmware', biosFirmware],
];

export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => [...MIGRATIONS],
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};

const MIGRATION_CONFIG: Knex.MigratorConfig = { migrationSource, tableName: 'bmaas_migrations' };

/** Brings the schema to the latest version; returns the names applied. */
export async function upgradeSchema(knex: Knex): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest(MIGRATION_CONFIG)) as [number, string[]];
  return applied;
}

/** Reverts every migration (tests and `bmaas-dbsync downgrade`). */
export async function downgradeSchema(knex: Knex): Promise<string[]> {
  const [, reverted] = (await knex.migrate.rollback(MIGRATION_CONFIG, true)) as [number, string[]];
  return reverted;
}

export async function schemaVersion(knex: Knex): Promise<string | null> {
  const version = await knex.migrate.currentVersion(MIGRATION_CONFIG);
  return version === 'none' ? null : version;
}
