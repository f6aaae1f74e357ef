import type { Knex } from 'knex';

/** Inspection: when each node's inspection started and finished, and the inventories ramdisks post. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    t.timestamp('inspection_started_at', { useTz: true });
    t.timestamp('inspection_finished_at', { useTz: true });
  });
  await knex.schema.createTable('node_inventory', (t) => {
    t.increments('id').primary();
    t.integer('node_id').notNullable().unique().references('id').inTable('nodes').onDelete('CASCADE');
    t.jsonb('inventory').notNullable();
    t.jsonb('plugin_data').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('node_inventory');
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumn('inspection_finished_at');
    t.dropColumn('inspection_started_at');
  });
}
