import type { Knex } from 'knex';
import { queryPrepared } from './prepared-query.js';

/** What changed for the boot path since a snapshot (see the boot_path_changes migration). */
export interface BootPathChanges {
  /** The log cannot tell (nodes or ports were truncated): everything held must be read again. */
  everything: boolean;
  /** Nodes updated or deleted, and the nodes of ports inserted, updated or deleted. */
  nodeIds: number[];
}

/**
 * Where a poller stands: a snapshot, and when the server that took it
 * started (the log is unlogged: a restart after a crash, or a failover,
 * empties it, and everything must be read again).
 */
export interface BootPathPosition {
  snapshot: string;
  serverStarted: string;
}

/** The changes, and where to ask from next time. */
export interface BootPathChangesSince {
  position: BootPathPosition;
  changes: BootPathChanges;
}

/*
 * The rows of transactions the given snapshot did not see. The statement's
 * own snapshot (pg_current_snapshot() inside one statement is the one it
 * reads with) comes back as the next starting point, so every row is read by
 * exactly the first poll whose snapshot sees its transaction committed.
 */
const CHANGES_SINCE_SQL = `with ch as (
    select node_id from boot_path_changes
    where xid >= pg_snapshot_xmin($1::pg_snapshot) and not pg_visible_in_snapshot(xid, $1::pg_snapshot)
  )
  select pg_current_snapshot()::text as snapshot, pg_postmaster_start_time()::text as started,
    coalesce((select array_agg(distinct node_id) from ch where node_id is not null), '{}') as node_ids,
    exists (select 1 from ch where node_id is null) as everything`;

/** The change log's SQL: where pollers start, what they read, and its pruning. */
export class BootPathChangeStore {
  constructor(private readonly db: Knex) {}

  /** A position to poll from: whatever a read started after this call sees, plus the log from here. */
  async position(): Promise<BootPathPosition> {
    const [row] = await queryPrepared<{ snapshot: string; started: string }>(
      this.db,
      'bmaas_boot_path_position',
      'select pg_current_snapshot()::text as snapshot, pg_postmaster_start_time()::text as started',
      [],
    );
    const { snapshot, started } = row as NonNullable<typeof row>;
    return { snapshot, serverStarted: started };
  }

  /** What changed since `position`; `everything` when the server restarted since. */
  async changesSince(position: BootPathPosition): Promise<BootPathChangesSince> {
    const [row] = await queryPrepared<{
      snapshot: string;
      started: string;
      node_ids: number[];
      everything: boolean;
    }>(this.db, 'bmaas_boot_path_changes_since', CHANGES_SINCE_SQL, [position.snapshot]);
    const { snapshot, started, node_ids, everything } = row as NonNullable<typeof row>;
    return {
      position: { snapshot, serverStarted: started },
      changes: { everything: everything || started !== position.serverStarted, nodeIds: node_ids },
    };
  }

  /**
   * Deletes entries older than `seconds` whose transactions every running
   * one already sees; a poller that has not read for that long starts again
   * from a full read (BootPathChangeFeed). Returns the count deleted.
   */
  async prune(seconds: number): Promise<number> {
    const rows = await queryPrepared<{ deleted: number }>(
      this.db,
      'bmaas_boot_path_prune',
      `with deleted as (
        delete from boot_path_changes
        where noted_at < now() - make_interval(secs => $1) and xid < pg_snapshot_xmin(pg_current_snapshot())
        returning 1
      ) select count(*)::int as deleted from deleted`,
      [seconds],
    );
    return rows[0]?.deleted ?? 0;
  }
}
