import type { Knex } from 'knex';

/** Inspection rules (API 1.96): conditions and actions applied to every inspection result. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('inspection_rules', (t) => {
    t.increments('id').primary();
    t.uuid('uuid').notNullable().unique();
    t.string('description', 255);
    t.integer('priority').notNullable().defaultTo(0);
    t.string('phase', 16).notNullable().defaultTo('main').index();
    t.boolean('sensitive').notNullable().defaultTo(false);
    t.jsonb('conditions').notNullable().defaultTo('[]');
    t.jsonb('actions').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('inspection_rules');
}
