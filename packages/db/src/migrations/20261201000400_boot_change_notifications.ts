import type { Knex } from 'knex';

/**
 * Notifications of the changes that can make a boot path read stale: every
 * statement that updates or deletes nodes, or inserts, updates or deletes
 * ports, sends one NOTIFY on `bmaas_boot_changes` at commit, naming the nodes
 * (`n:<uuid>`) and MAC addresses (`m:<mac>`) it touched, space-separated; `*`
 * (everything) when the list would not fit a notification or for TRUNCATE.
 * Statement-level triggers with transition tables, so a bulk insert is one
 * notification, not one per row. Nothing is sent for a rolled-back change.
 */
export const BOOT_CHANGES_CHANNEL = 'bmaas_boot_changes';

const TRIGGERS = [
  {
    name: 'bmaas_nodes_updated',
    table: 'nodes',
    event: 'update',
    referencing: 'old table as old_rows new table as new_rows',
  },
  { name: 'bmaas_nodes_deleted', table: 'nodes', event: 'delete', referencing: 'old table as old_rows' },
  { name: 'bmaas_ports_inserted', table: 'ports', event: 'insert', referencing: 'new table as new_rows' },
  {
    name: 'bmaas_ports_updated',
    table: 'ports',
    event: 'update',
    referencing: 'old table as old_rows new table as new_rows',
  },
  { name: 'bmaas_ports_deleted', table: 'ports', event: 'delete', referencing: 'old table as old_rows' },
  { name: 'bmaas_nodes_truncated', table: 'nodes', event: 'truncate', referencing: undefined },
  { name: 'bmaas_ports_truncated', table: 'ports', event: 'truncate', referencing: undefined },
] as const;

/** The triggers `up` creates: a feed checks they are there before it lets anything cache. */
export const BOOT_CHANGE_TRIGGERS: readonly string[] = TRIGGERS.map((trigger) => trigger.name);

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function bmaas_notify_boot_changes() returns trigger language plpgsql as $$
    declare
      payload text;
    begin
      -- Each branch reads only the transition tables its trigger defines.
      if TG_TABLE_NAME = 'nodes' then
        select string_agg(distinct 'n:' || uuid, ' ') into payload from old_rows;
      elsif TG_OP = 'INSERT' then
        select string_agg(distinct token, ' ') into payload from (
          select 'm:' || r.address as token from new_rows r
          union all select 'n:' || n.uuid from new_rows r join nodes n on n.id = r.node_id) tokens;
      elsif TG_OP = 'DELETE' then
        select string_agg(distinct token, ' ') into payload from (
          select 'm:' || r.address as token from old_rows r
          union all select 'n:' || n.uuid from old_rows r join nodes n on n.id = r.node_id) tokens;
      else
        select string_agg(distinct token, ' ') into payload from (
          select 'm:' || r.address as token from old_rows r
          union all select 'm:' || r.address from new_rows r
          union all select 'n:' || n.uuid from old_rows r join nodes n on n.id = r.node_id
          union all select 'n:' || n.uuid from new_rows r join nodes n on n.id = r.node_id) tokens;
      end if;
      if payload is null then
        return null;
      end if;
      -- A notification carries at most 8000 bytes: a change too large to list is "everything".
      if octet_length(payload) > 7900 then
        payload := '*';
      end if;
      perform pg_notify('${BOOT_CHANGES_CHANNEL}', payload);
      return null;
    end;
    $$`);
  await knex.raw(`
    create function bmaas_notify_boot_truncate() returns trigger language plpgsql as $$
    begin
      perform pg_notify('${BOOT_CHANGES_CHANNEL}', '*');
      return null;
    end;
    $$`);
  for (const { name, table, event, referencing } of TRIGGERS) {
    const fn = referencing === undefined ? 'bmaas_notify_boot_truncate' : 'bmaas_notify_boot_changes';
    const transition = referencing === undefined ? '' : ` referencing ${referencing}`;
    await knex.raw(
      `create trigger ${name} after ${event} on ${table}${transition} for each statement execute function ${fn}()`,
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const { name, table } of TRIGGERS) await knex.raw(`drop trigger if exists ${name} on ${table}`);
  await knex.raw('drop function if exists bmaas_notify_boot_changes()');
  await knex.raw('drop function if exists bmaas_notify_boot_truncate()');
}
