import type { Knex } from 'knex';

/** Nodes, ports, conductors and the hardware interfaces conductors register. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('conductors', (t) => {
    t.increments('id').primary();
    t.string('hostname', 255).notNullable().unique();
    t.string('conductor_group', 255).notNullable().defaultTo('');
    t.boolean('online').notNullable().defaultTo(true);
    t.jsonb('drivers').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  });

  await knex.schema.createTable('conductor_hardware_interfaces', (t) => {
    t.increments('id').primary();
    t.integer('conductor_id').notNullable().references('id').inTable('conductors').onDelete('CASCADE');
    t.string('hardware_type', 255).notNullable();
    t.string('interface_type', 16).notNullable();
    t.string('interface_name', 255).notNullable();
    t.boolean('default').notNullable().defaultTo(false);
    t.unique(['conductor_id', 'hardware_type', 'interface_type', 'interface_name'], {
      indexName: 'uniq_conductor_hw_iface',
    });
  });

  await knex.schema.createTable('nodes', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('name', 255).unique();
    t.string('driver', 255).notNullable().index();
    t.string('boot_interface', 255).notNullable();
    t.string('deploy_interface', 255).notNullable();
    t.string('power_interface', 255).notNullable();
    t.string('management_interface', 255).notNullable();
    t.jsonb('driver_info').notNullable().defaultTo('{}');
    t.jsonb('driver_internal_info').notNullable().defaultTo('{}');
    t.jsonb('instance_info').notNullable().defaultTo('{}');
    t.uuid('instance_uuid').unique();
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.jsonb('extra').notNullable().defaultTo('{}');
    t.string('provision_state', 64).notNullable().defaultTo('enroll').index();
    t.string('target_provision_state', 64);
    t.timestamp('provision_updated_at', { useTz: true });
    t.string('power_state', 32);
    t.string('target_power_state', 32);
    t.text('last_error');
    t.boolean('maintenance').notNullable().defaultTo(false);
    t.text('maintenance_reason');
    t.string('reservation', 255).index();
    t.integer('conductor_affinity');
    t.string('conductor_group', 255).notNullable().defaultTo('').index();
    t.string('resource_class', 80);
    t.text('description');
    t.boolean('automated_clean');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  });

  await knex.schema.createTable('ports', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    // Globally unique, stored lower-case with colons: the boot path's lookup key.
    t.string('address', 18).notNullable().unique();
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE').index();
    t.boolean('pxe_enabled').notNullable().defaultTo(true);
    t.string('physical_network', 64);
    t.jsonb('local_link_connection').notNullable().defaultTo('{}');
    t.jsonb('extra').notNullable().defaultTo('{}');
    t.string('name', 255);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ports');
  await knex.schema.dropTable('nodes');
  await knex.schema.dropTable('conductor_hardware_interfaces');
  await knex.schema.dropTable('conductors');
}
