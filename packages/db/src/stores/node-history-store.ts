import type { NodeHistoryRecord } from '@bmaas/common';
import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { rowToRecord } from './case.js';
import { queryPrepared } from './prepared-query.js';

/** What is recorded; uuid and created_at are filled in. */
export type NewNodeHistory = Pick<NodeHistoryRecord, 'nodeId' | 'conductor' | 'eventType' | 'severity' | 'event'> & {
  user?: string | null;
  project?: string | null;
  state?: string | null;
  targetProvisionState?: string | null;
  durationSeconds?: number | null;
  createdAt?: Date;
};

const APPEND_SQL = `insert into node_history (uuid, node_id, conductor, event_type, severity, event, "user", created_at,
    project, state, target_provision_state, duration_seconds)
  select e.uuid, e.node_id, e.conductor, e.event_type, e.severity, e.event, e."user", e.created_at,
    e.project, e.state, e.target_provision_state, e.duration_seconds
  from unnest($1::uuid[], $2::integer[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[],
      $9::text[], $10::text[], $11::text[], $12::integer[])
    with ordinality as e(uuid, node_id, conductor, event_type, severity, event, "user", created_at,
      project, state, target_provision_state, duration_seconds, position)
  where exists (select 1 from nodes n where n.id = e.node_id)
  order by e.position`;

export interface NodeHistoryPage {
  limit: number;
  /** uuid of the last entry of the previous page. */
  marker?: string;
  sortDir: 'asc' | 'desc';
}

/** SQL for node_history: entries are appended, read by node in the order they were written. */
export class NodeHistoryStore {
  constructor(private readonly db: Knex) {}

  /**
   * Appends entries in one INSERT. Entries of nodes deleted meanwhile are
   * dropped. Their uuids are version 7 (time first, RFC 9562): each goes to
   * the right edge of the uuid index, where random ones touched a page of
   * their own per entry; in a boot storm every machine's first fetch is an
   * entry (docs/performance.md). The columns travel as arrays, one
   * parameter each, whatever the number of entries; ids follow the order
   * of the entries (listing by id is their order).
   */
  async append(entries: readonly NewNodeHistory[]): Promise<void> {
    if (entries.length === 0) return;
    const now = new Date();
    // One array per column, in APPEND_SQL's order.
    const columns = [
      entries.map(() => uuidv7()),
      entries.map((entry) => entry.nodeId),
      entries.map((entry) => entry.conductor),
      entries.map((entry) => entry.eventType),
      entries.map((entry) => entry.severity),
      entries.map((entry) => entry.event),
      entries.map((entry) => entry.user ?? null),
      entries.map((entry) => entry.createdAt ?? now),
      entries.map((entry) => entry.project ?? null),
      entries.map((entry) => entry.state ?? null),
      entries.map((entry) => entry.targetProvisionState ?? null),
      entries.map((entry) => entry.durationSeconds ?? null),
    ];
    // insert … select … where exists: a node deleted since the entry was queued takes its entries with it.
    await queryPrepared(this.db, 'bmaas_node_history_append', APPEND_SQL, columns);
  }

  /**
   * Deletes, oldest first and at most `batchCount`, the entries beyond the
   * newest `maxEntries` of their node that are older than `minimumDays`;
   * answers how many went. Safe to run from several conductors at once.
   */
  async prune(options: { maxEntries: number; minimumDays: number; batchCount: number }): Promise<number> {
    if (options.batchCount <= 0) return 0;
    const result = await this.db.raw(
      `delete from node_history where id in (
         select id from (
           select id, created_at, row_number() over (partition by node_id order by id desc) as newer
           from node_history
         ) ranked
         where newer > ? and created_at < now() - make_interval(days => ?)
         order by id
         limit ?
       )`,
      [options.maxEntries, options.minimumDays, options.batchCount],
    );
    return (result as { rowCount: number }).rowCount;
  }

  async list(nodeId: number, page: NodeHistoryPage): Promise<NodeHistoryRecord[]> {
    const q = this.db('node_history').where({ node_id: nodeId });
    if (page.marker !== undefined) {
      const op = page.sortDir === 'asc' ? '>' : '<';
      q.where('id', op, this.db('node_history').select('id').where({ uuid: page.marker }));
    }
    const rows = await q.orderBy('id', page.sortDir).limit(page.limit);
    return rows.map((row) => rowToRecord<NodeHistoryRecord>(row));
  }

  async get(nodeId: number, uuid: string): Promise<NodeHistoryRecord | undefined> {
    const row = await this.db('node_history').where({ node_id: nodeId, uuid }).first();
    return row ? rowToRecord<NodeHistoryRecord>(row) : undefined;
  }

  async exists(uuid: string): Promise<boolean> {
    return (await this.db('node_history').where({ uuid }).first('id')) !== undefined;
  }
}
