import type { Knex } from 'knex';

/** Generic implementation each interface kind added here gets on existing nodes. */
const OPTIONAL_INTERFACE_DEFAULTS = {
  bios_interface: 'no-bios',
  console_interface: 'no-console',
  firmware_interface: 'no-firmware',
  inspect_interface: 'no-inspect',
  network_interface: 'noop',
  raid_interface: 'no-raid',
  rescue_interface: 'no-rescue',
  storage_interface: 'noop',
  vendor_interface: 'no-vendor',
} as const;

/**
 * Node fields up to API 1.95 (ownership, protection, retirement, shards,
 * parent nodes, boot mode, RAID configs, every interface kind), node traits
 * and node history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    for (const [column, value] of Object.entries(OPTIONAL_INTERFACE_DEFAULTS)) {
      t.string(column, 255).notNullable().defaultTo(value);
    }
    t.string('owner', 255).index();
    t.string('lessee', 255).index();
    t.boolean('protected').notNullable().defaultTo(false);
    t.text('protected_reason');
    t.boolean('retired').notNullable().defaultTo(false);
    t.text('retired_reason');
    t.jsonb('network_data').notNullable().defaultTo('{}');
    t.boolean('disable_power_off').notNullable().defaultTo(false);
    t.string('shard', 255).index();
    t.uuid('parent_node').index();
    t.string('boot_mode', 16);
    t.boolean('secure_boot');
    t.string('fault', 255);
    t.boolean('console_enabled').notNullable().defaultTo(false);
    t.jsonb('raid_config').notNullable().defaultTo('{}');
    t.jsonb('target_raid_config').notNullable().defaultTo('{}');
  });

  await knex.schema.createTable('node_traits', (t) => {
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE');
    t.string('trait', 255).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['node_id', 'trait']);
  });

  await knex.schema.createTable('node_history', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE');
    t.string('conductor', 255);
    t.string('event_type', 32).notNullable();
    t.string('severity', 16).notNullable();
    t.text('event').notNullable();
    t.string('user', 64);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['node_id', 'id'], 'node_history_node_id_id_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('node_history');
  await knex.schema.dropTable('node_traits');
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumns(
      ...Object.keys(OPTIONAL_INTERFACE_DEFAULTS),
      'owner',
      'lessee',
      'protected',
      'protected_reason',
      'retired',
      'retired_reason',
      'network_data',
      'disable_power_off',
      'shard',
      'parent_node',
      'boot_mode',
      'secure_boot',
      'fault',
      'console_enabled',
      'raid_config',
      'target_raid_config',
    );
  });
}
