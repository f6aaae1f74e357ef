import type { Knex } from 'knex';

/** The BIOS settings and firmware components conductors cache per node (Ironic's bios_settings, firmware_information). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('bios_settings', (t) => {
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.text('value');
    t.string('attribute_type', 255);
    t.jsonb('allowable_values');
    t.bigInteger('lower_bound');
    t.bigInteger('upper_bound');
    t.integer('min_length');
    t.integer('max_length');
    t.boolean('read_only');
    t.boolean('reset_required');
    t.boolean('unique');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
    t.primary(['node_id', 'name']);
  });
  await knex.schema.createTable('firmware_information', (t) => {
    t.increments('id').primary();
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE');
    t.string('component', 255).notNullable();
    t.string('initial_version', 255).notNullable();
    t.string('current_version', 255).notNullable();
    t.string('last_version_flashed', 255);
    t.string('vendor', 255);
    t.string('model', 255);
    t.string('serial_number', 255);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
    t.unique(['node_id', 'component']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('firmware_information');
  await knex.schema.dropTable('bios_settings');
}
