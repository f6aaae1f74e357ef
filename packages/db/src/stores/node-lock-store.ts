import { type NodeRecord, type PortRecord, TurnBatcher } from '@bmaas/common';
import type { Knex } from 'knex';
import {
  NODES_WITH_PORTS_SQL,
  type NodeChanges,
  type NodeWithPorts,
  readManyByUuid,
  UUID,
  withPorts,
  writeNodeWhere,
} from './node-rows.js';
import { queryPrepared, updatePrepared } from './prepared-query.js';

/** Nodes with their ports and their row version (xmin: every update of a row changes it), by uuid. */
const VERSIONED_NODES_WITH_PORTS_SQL = NODES_WITH_PORTS_SQL.replace(
  'select n.*,',
  'select n.*, n.xmin::text as bmaas_version,',
);
/** The exclusive lock taken and the node read with its ports, in one statement (reserveByUuidWithPorts). */
const RESERVE_WITH_PORTS_SQL = `with n as (
    update nodes set reservation = $2, updated_at = now() where uuid = $1 and reservation is null returning *
  )
  select n.*,
  coalesce((select json_agg(p order by p.id) from ports p where p.node_id = n.id), '[]'::json) as bmaas_ports
  from n`;

/** A node, its ports and the version of its row when read: what a lock taken by its first write checks. */
export interface VersionedNode {
  node: NodeRecord;
  ports: PortRecord[];
  /** The row's xmin, as text: any update of the node since the read changes it. */
  version: string;
}

/**
 * The nodes' exclusive locks (the reservation column): taking, writing under
 * and releasing them, and the versioned reads of a lock taken by its first write.
 */
export class NodeLockStore {
  /** Reads of locks taken by their first write asked for while the previous one runs go together, as one query. */
  private readonly versionedReads = new TurnBatcher((uuids: string[]) => this.getManyVersionedByUuidWithPorts(uuids), {
    maxInFlight: 1,
  });

  constructor(private readonly db: Knex) {}

  /**
   * A node with its ports and its row's version, for an exclusive lock taken
   * by the task's first write (updateIfUnreservedVersion). Reads asked for
   * while the previous one runs go together, as one query: provisioning
   * actions arrive in bursts.
   */
  getVersionedByUuidWithPorts(uuid: string): Promise<VersionedNode | undefined> {
    return this.versionedReads.get(uuid);
  }

  /** getVersionedByUuidWithPorts for several nodes in one query: one answer per uuid, in order. */
  getManyVersionedByUuidWithPorts(uuids: readonly string[]): Promise<Array<VersionedNode | undefined>> {
    return readManyByUuid(this.db, uuids, 'bmaas_versioned_nodes_with_ports', VERSIONED_NODES_WITH_PORTS_SQL, (row) =>
      Object.assign(withPorts(row), { version: String(row.bmaas_version) }),
    );
  }

  /**
   * The exclusive lock: one conditional UPDATE. True when `host` now holds the
   * reservation, false when someone else does.
   */
  async reserve(id: number, host: string): Promise<boolean> {
    const count = await this.db('nodes')
      .where({ id })
      .whereNull('reservation')
      .update({ reservation: host, updated_at: this.db.fn.now() });
    return count === 1;
  }

  /**
   * reserve() by uuid, and the node with its ports read in the same
   * statement (prepared): the exclusive lock of every provisioning action
   * took three queries (node by uuid, reserve, node again) and a fourth for
   * the ports. Undefined when there is no such node or someone else holds
   * it (the caller tells which apart on that slower path).
   */
  async reserveByUuidWithPorts(uuid: string, host: string): Promise<NodeWithPorts | undefined> {
    if (!UUID.test(uuid)) return undefined;
    const [row] = await queryPrepared<Record<string, unknown>>(
      this.db,
      'bmaas_node_reserve_with_ports',
      RESERVE_WITH_PORTS_SQL,
      [uuid, host],
    );
    return row ? withPorts(row) : undefined;
  }

  /**
   * NodeStore.update(id, changes, { reservation: host }): the write of a lock holder,
   * as a named statement per column list (see updatePrepared); the row, or
   * undefined when `host` no longer holds the node.
   */
  async updateReservedBy(id: number, host: string, changes: NodeChanges): Promise<NodeRecord | undefined> {
    return writeNodeWhere(this.db, { id, reservation: host }, changes);
  }

  /**
   * The write that takes the exclusive lock (a lock taken by the task's first
   * write): `changes` and `host`'s reservation in one statement, only where
   * the node is unreserved and its row still the `version` read
   * (getVersionedByUuidWithPorts). When `changes` clears the reservation
   * itself, the node is written and left unlocked. Undefined when the node
   * was locked or changed meanwhile, or is gone.
   */
  async updateIfUnreservedVersion(
    id: number,
    version: string,
    host: string,
    changes: NodeChanges,
  ): Promise<NodeRecord | undefined> {
    return writeNodeWhere(this.db, { id, reservation: null, xmin: version }, { reservation: host, ...changes });
  }

  /** Releases the lock only where `host` still holds it (a prepared statement: once per lock). */
  async release(id: number, host: string): Promise<boolean> {
    const rows = await updatePrepared(
      this.db,
      'nodes',
      { reservation: null },
      { id, reservation: host },
      { returning: '"id"' },
    );
    return rows.length === 1;
  }

  /** On conductor start: locks left by a previous run of the same host. */
  async clearReservations(host: string): Promise<number> {
    return this.db('nodes').where({ reservation: host }).update({ reservation: null });
  }
}
