import type { Knex } from 'knex';

/** nodes.fault (Ironic's node fault): why the service put a node in maintenance, e.g. "power failure". */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    t.text('fault');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('nodes', (t) => {
    t.dropColumn('fault');
  });
}
