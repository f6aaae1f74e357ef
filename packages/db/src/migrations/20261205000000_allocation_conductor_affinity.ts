import type { Knex } from 'knex';

/**
 * The conductor processing an allocation (as Ironic's
 * allocations.conductor_affinity): allocations are processed by a conductor
 * after the API answered, and those a conductor left in `allocating` are
 * resumed when it starts or adopted by another when it died.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('allocations', (t) => {
    t.integer('conductor_affinity').references('id').inTable('conductors').onDelete('SET NULL');
    t.index(['state', 'conductor_affinity'], 'allocations_state_conductor_affinity_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('allocations', (t) => {
    t.dropIndex(['state', 'conductor_affinity'], 'allocations_state_conductor_affinity_idx');
    t.dropColumn('conductor_affinity');
  });
}
