import type { Knex } from 'knex';

/**
 * Chassis, portgroups, allocations, deploy templates, runbooks and volume
 * connectors and targets; ports gain a portgroup, a smartNIC flag and unique
 * names; nodes a chassis and an allocation. Nodes and ports point at these by
 * uuid (what the API answers), so reading a node or a port needs no join.
 */
export async function up(knex: Knex): Promise<void> {
  const timestamps = (t: Knex.CreateTableBuilder) => {
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  };
  const nodeOwned = (t: Knex.CreateTableBuilder) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.integer('node_id').notNullable().references('id').inTable('nodes').onDelete('CASCADE').index();
  };

  await knex.schema.createTable('chassis', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('description', 255);
    t.jsonb('extra').notNullable().defaultTo('{}');
    timestamps(t);
  });

  await knex.schema.createTable('portgroups', (t) => {
    nodeOwned(t);
    t.string('name', 255).unique();
    t.string('address', 18).unique();
    t.string('mode', 255).notNullable();
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.boolean('standalone_ports_supported').notNullable().defaultTo(true);
    t.jsonb('internal_info').notNullable().defaultTo('{}');
    t.jsonb('extra').notNullable().defaultTo('{}');
    timestamps(t);
  });

  await knex.schema.alterTable('ports', (t) => {
    // By uuid, like a node's chassis: answering a port needs no join.
    t.uuid('portgroup_uuid').references('uuid').inTable('portgroups').index();
    t.boolean('is_smartnic').notNullable().defaultTo(false);
    t.unique(['name'], { indexName: 'ports_name_unique' });
  });

  await knex.schema.createTable('allocations', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('name', 255).unique();
    t.integer('node_id').unique().references('id').inTable('nodes').onDelete('CASCADE');
    t.string('state', 15).notNullable().defaultTo('allocating');
    t.text('last_error');
    t.string('resource_class', 80);
    t.jsonb('traits').notNullable().defaultTo('[]');
    t.jsonb('candidate_nodes').notNullable().defaultTo('[]');
    t.jsonb('extra').notNullable().defaultTo('{}');
    t.string('owner', 255);
    timestamps(t);
  });

  await knex.schema.alterTable('nodes', (t) => {
    t.uuid('chassis_uuid').references('uuid').inTable('chassis').index();
    t.uuid('allocation_uuid').references('uuid').inTable('allocations').onDelete('SET NULL');
  });

  await knex.schema.createTable('deploy_templates', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('name', 255).notNullable().unique();
    t.jsonb('steps').notNullable().defaultTo('[]');
    t.jsonb('extra').notNullable().defaultTo('{}');
    timestamps(t);
  });

  await knex.schema.createTable('runbooks', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('name', 255).notNullable().unique();
    t.jsonb('steps').notNullable().defaultTo('[]');
    t.boolean('disable_ramdisk').notNullable().defaultTo(false);
    t.boolean('public').notNullable().defaultTo(false);
    t.string('owner', 255);
    t.jsonb('extra').notNullable().defaultTo('{}');
    timestamps(t);
  });

  await knex.schema.createTable('volume_connectors', (t) => {
    nodeOwned(t);
    t.string('type', 32).notNullable();
    t.string('connector_id', 255).notNullable();
    t.jsonb('extra').notNullable().defaultTo('{}');
    t.unique(['type', 'connector_id'], { indexName: 'volume_connectors_type_connector_id_unique' });
    timestamps(t);
  });

  await knex.schema.createTable('volume_targets', (t) => {
    nodeOwned(t);
    t.string('volume_type', 64).notNullable();
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.integer('boot_index').notNullable();
    t.string('volume_id', 36).notNullable();
    t.jsonb('extra').notNullable().defaultTo('{}');
    t.unique(['node_id', 'boot_index'], { indexName: 'volume_targets_node_id_boot_index_unique' });
    timestamps(t);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('volume_targets');
  await knex.schema.dropTable('volume_connectors');
  await knex.schema.dropTable('runbooks');
  await knex.schema.dropTable('deploy_templates');
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumn('allocation_uuid');
    t.dropColumn('chassis_uuid');
  });
  await knex.schema.dropTable('allocations');
  await knex.schema.alterTable('ports', (t) => {
    t.dropUnique(['name'], 'ports_name_unique');
    t.dropColumn('is_smartnic');
    t.dropColumn('portgroup_uuid');
  });
  await knex.schema.dropTable('portgroups');
  await knex.schema.dropTable('chassis');
}
