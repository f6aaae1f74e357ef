import type { Knex } from 'knex';

/**
 * Columns of API versions 1.97-1.115: port description, vendor, category
 * and dynamic portgroup membership; portgroup physical network, category and
 * whether a conductor made it; node instance_name and health; runbook
 * description and traits; who and in which state node history entries were
 * written, and how long the step took.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ports', (t) => {
    t.string('description', 255);
    t.string('vendor', 32);
    t.string('category', 80);
    t.boolean('available_for_dynamic_portgroup').notNullable().defaultTo(true);
  });
  await knex.schema.alterTable('portgroups', (t) => {
    t.string('physical_network', 64);
    t.string('category', 80);
    t.boolean('dynamic_portgroup').notNullable().defaultTo(false);
  });
  await knex.schema.alterTable('nodes', (t) => {
    t.string('instance_name', 255);
    t.string('health', 16);
  });
  await knex.schema.alterTable('runbooks', (t) => {
    t.string('description', 255);
  });
  await knex.schema.createTable('runbook_traits', (t) => {
    t.integer('runbook_id').notNullable().references('id').inTable('runbooks').onDelete('CASCADE');
    t.string('trait', 255).notNullable();
    t.primary(['runbook_id', 'trait']);
  });
  await knex.schema.alterTable('node_history', (t) => {
    t.string('project', 64);
    t.string('state', 64);
    t.string('target_provision_state', 64);
    t.integer('duration_seconds');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('node_history', (t) => {
    t.dropColumns('project', 'state', 'target_provision_state', 'duration_seconds');
  });
  await knex.schema.dropTable('runbook_traits');
  await knex.schema.alterTable('runbooks', (t) => {
    t.dropColumn('description');
  });
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumns('instance_name', 'health');
  });
  await knex.schema.alterTable('portgroups', (t) => {
    t.dropColumns('physical_network', 'category', 'dynamic_portgroup');
  });
  await knex.schema.alterTable('ports', (t) => {
    t.dropColumns('description', 'vendor', 'category', 'available_for_dynamic_portgroup');
  });
}
