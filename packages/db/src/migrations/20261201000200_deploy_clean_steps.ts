import type { Knex } from 'knex';

/** The deploy or clean step a node runs now (Ironic's nodes.deploy_step / clean_step); {} when none. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    t.jsonb('deploy_step').notNullable().defaultTo('{}');
    t.jsonb('clean_step').notNullable().defaultTo('{}');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumn('deploy_step');
    t.dropColumn('clean_step');
  });
}
