import type { Knex } from 'knex';

/**
 * Cheaper writes to `nodes`, which every provisioning step updates several
 * times (docs/performance.md, "Locks as heap-only updates").
 *
 * - An UPDATE that changes no indexed column, on a page with room for the
 *   new row version, is a heap-only (HOT) update: no index is touched. Taking
 *   and releasing a node's lock changed `reservation`, which had an index of
 *   its own, so every lock cost an entry in each of the table's indexes. That
 *   index goes: nodes are looked up by `reservation` only when a conductor
 *   starts (its stale locks) and in the rare list filtered by it.
 * - A fillfactor of 75 leaves each page room for new row versions, so that a
 *   HOT update finds space on its page (it applies to pages written from now
 *   on; existing ones keep theirs until they are rewritten).
 * - Columns most nodes leave empty (owner, lessee, shard, parent_node,
 *   chassis_uuid, instance_uuid) are indexed only where set. Any update that
 *   is not HOT (a provision state change) writes an entry in every index
 *   whose predicate the new row version meets; before, a NULL was indexed too.
 *   Their filters (`owner = …`, `shard in (…)`, …) imply NOT NULL, so the
 *   planner still uses them.
 */
const SPARSE_INDEXED_COLUMNS = ['owner', 'lessee', 'shard', 'parent_node', 'chassis_uuid'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index nodes_reservation_index');
  for (const column of SPARSE_INDEXED_COLUMNS) {
    await knex.raw(`drop index nodes_${column}_index`);
    await knex.raw(`create index nodes_${column}_index on nodes (${column}) where ${column} is not null`);
  }
  // Same name as the constraint it replaces: duplicate-key errors are recognised by it.
  await knex.raw('alter table nodes drop constraint nodes_instance_uuid_unique');
  await knex.raw(
    'create unique index nodes_instance_uuid_unique on nodes (instance_uuid) where instance_uuid is not null',
  );
  await knex.raw('alter table nodes set (fillfactor = 75)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table nodes reset (fillfactor)');
  await knex.raw('drop index nodes_instance_uuid_unique');
  await knex.raw('alter table nodes add constraint nodes_instance_uuid_unique unique (instance_uuid)');
  for (const column of SPARSE_INDEXED_COLUMNS) {
    await knex.raw(`drop index nodes_${column}_index`);
    await knex.raw(`create index nodes_${column}_index on nodes (${column})`);
  }
  await knex.raw('create index nodes_reservation_index on nodes (reservation)');
}
