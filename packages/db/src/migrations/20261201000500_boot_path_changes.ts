import type { Knex } from 'knex';

/**
 * A change log of what the boot path reads: the API's MAC index and the
 * conductors' node cache follow it by polling (BootPathChangeFeed) instead of
 * asking PostgreSQL on every boot request.
 *
 * - Statement triggers append the ids of the nodes an UPDATE or DELETE
 *   touched, and the node of every port inserted, updated or deleted (a port
 *   moved to another node names both): one INSERT … SELECT per statement,
 *   whatever its row count.
 * - Each row carries its transaction's id (xid8). A poller reads the rows of
 *   transactions its previous snapshot did not see, so a transaction still
 *   open at one poll is read at the first poll after its commit.
 * - UNLOGGED, one index (xid) and no key: the least a writer pays. No WAL
 *   for the log; a crash or a failover empties it, so pollers start again
 *   from a full read when the server's start time changes.
 * - No NOTIFY: notifying transactions commit one at a time (measured in
 *   docs/performance.md); these inserts take no lock shared by writers.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table boot_path_changes (
      xid xid8 not null default pg_current_xact_id(),
      node_id integer,
      noted_at timestamptz not null default now()
    );
    create index boot_path_changes_xid on boot_path_changes (xid);

    create function bmaas_note_node_changes() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' then
        insert into boot_path_changes (node_id) select id from old_rows;
      else
        insert into boot_path_changes (node_id) select id from new_rows;
      end if;
      return null;
    end $$;

    create function bmaas_note_port_changes() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        insert into boot_path_changes (node_id) select node_id from new_rows;
      elsif tg_op = 'DELETE' then
        insert into boot_path_changes (node_id) select node_id from old_rows;
      else
        insert into boot_path_changes (node_id) select node_id from old_rows union select node_id from new_rows;
      end if;
      return null;
    end $$;

    create trigger nodes_updated_note after update on nodes
      referencing old table as old_rows new table as new_rows
      for each statement execute function bmaas_note_node_changes();
    create trigger nodes_deleted_note after delete on nodes
      referencing old table as old_rows
      for each statement execute function bmaas_note_node_changes();
    create trigger ports_inserted_note after insert on ports
      referencing new table as new_rows
      for each statement execute function bmaas_note_port_changes();
    create trigger ports_updated_note after update on ports
      referencing old table as old_rows new table as new_rows
      for each statement execute function bmaas_note_port_changes();
    create trigger ports_deleted_note after delete on ports
      referencing old table as old_rows
      for each statement execute function bmaas_note_port_changes();

    -- TRUNCATE fires no row-level work: one entry without a node says "everything".
    create function bmaas_note_truncate() returns trigger language plpgsql as $$
    begin
      insert into boot_path_changes (node_id) values (null);
      return null;
    end $$;
    create trigger nodes_truncated_note after truncate on nodes
      for each statement execute function bmaas_note_truncate();
    create trigger ports_truncated_note after truncate on ports
      for each statement execute function bmaas_note_truncate();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger ports_truncated_note on ports;
    drop trigger nodes_truncated_note on nodes;
    drop function bmaas_note_truncate();
    drop trigger ports_deleted_note on ports;
    drop trigger ports_updated_note on ports;
    drop trigger ports_inserted_note on ports;
    drop trigger nodes_deleted_note on nodes;
    drop trigger nodes_updated_note on nodes;
    drop function bmaas_note_port_changes();
    drop function bmaas_note_node_changes();
    drop table boot_path_changes;
  `);
}
