import {
  DuplicateName,
  InvalidParameterValue,
  NodeAlreadyExists,
  type NodeRecord,
  type PortRecord,
} from '@bmaas/common';
import type { Knex } from 'knex';
import { recordToColumns, rowToRecord } from './case.js';
import { isForeignKeyViolation, isUniqueViolation } from './pg-errors.js';
import { portFromJson } from './port-store.js';
import { queryPrepared, updatePrepared } from './prepared-query.js';

// What the node stores (NodeStore, NodeLockStore, PeriodicNodeQueries, NodeCountStore) share: the
// nodes table's JSON columns, the reads of a node with its ports, the write and the error translation.

/** The nodes table's JSON columns (written as JSON, read back as objects). */
export const NODE_JSON_COLUMNS = new Set([
  'driver_info',
  'driver_internal_info',
  'instance_info',
  'properties',
  'extra',
  'network_data',
  'raid_config',
  'target_raid_config',
  'deploy_step',
  'clean_step',
]);

/** A node with its ports as JSON (bmaas_ports), by uuid. */
export const NODE_WITH_PORTS_SQL = `select n.*,
  coalesce((select json_agg(p order by p.id) from ports p where p.node_id = n.id), '[]'::json) as bmaas_ports
  from nodes n where n.uuid = $1`;
/** NODE_WITH_PORTS_SQL for an array of uuids. */
export const NODES_WITH_PORTS_SQL = NODE_WITH_PORTS_SQL.replace('where n.uuid = $1', 'where n.uuid = any($1::uuid[])');

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A node and its ports, as the reads with ports return them. */
export interface NodeWithPorts {
  node: NodeRecord;
  ports: PortRecord[];
}

/** Fields a store update may set (never id, uuid or created_at). */
export type NodeChanges = Partial<Omit<NodeRecord, 'id' | 'uuid' | 'createdAt' | 'updatedAt'>>;

/**
 * A node row carrying its ports as JSON (bmaas_ports) → the node and its port
 * records. A versioned read's bmaas_version is left out of the node too, so
 * that the row is copied once.
 */
export function withPorts(row: Record<string, unknown>): NodeWithPorts {
  const { bmaas_ports: portRows, bmaas_version: _version, ...nodeRow } = row;
  const node = rowToRecord<NodeRecord>(nodeRow);
  return { node, ports: (portRows as Array<Record<string, unknown>>).map((port) => portFromJson(port, node.uuid)) };
}

/**
 * The nodes `uuids` read by one named statement taking them as `$1`
 * (strings that are not UUIDs find nothing), each row made into an answer
 * by `answer`: one answer per uuid, in order.
 */
export async function readManyByUuid<T extends { node: NodeRecord }>(
  db: Knex,
  uuids: readonly string[],
  name: string,
  sql: string,
  answer: (row: Record<string, unknown>) => T,
): Promise<Array<T | undefined>> {
  const wanted = uuids.filter((uuid) => UUID.test(uuid));
  const rows = wanted.length === 0 ? [] : await queryPrepared<Record<string, unknown>>(db, name, sql, [wanted]);
  const byUuid = new Map<string, T>();
  for (const row of rows) {
    const read = answer(row);
    byUuid.set(read.node.uuid, read);
  }
  return uuids.map((uuid) => byUuid.get(uuid.toLowerCase()));
}

/** Updates the node where the columns of `where` (snake_case) hold its values; undefined when none does. */
export async function updateNodeWhere(
  db: Knex,
  where: Record<string, unknown>,
  changes: NodeChanges,
): Promise<NodeRecord | undefined> {
  const write = async (on: Knex | Knex.Transaction, extra: Record<string, unknown> = {}) => {
    const [row] = await on('nodes')
      .where(where)
      .update(Object.assign(recordToColumns(changes, NODE_JSON_COLUMNS), extra, { updated_at: db.fn.now() }))
      .returning('*');
    return row as Record<string, unknown> | undefined;
  };
  try {
    // A node whose instance goes (undeploy, a patch removing instance_uuid) loses its allocation too, as in Ironic.
    const row =
      changes.instanceUuid === null
        ? await db.transaction(async (trx) => {
            const updated = await write(trx, { allocation_uuid: null });
            if (updated) await trx('allocations').where({ node_id: updated.id }).delete();
            return updated;
          })
        : await write(db);
    return row ? rowToRecord<NodeRecord>(row) : undefined;
  } catch (error) {
    throw translateNodeError(error, changes);
  }
}

/**
 * A conditional write of a lock holder (where `where` holds), as a named
 * statement per column list (see updatePrepared); undefined when none matches.
 */
export async function writeNodeWhere(
  db: Knex,
  where: Record<string, unknown>,
  changes: NodeChanges,
): Promise<NodeRecord | undefined> {
  // Losing the instance also drops the allocation, in a transaction: updateNodeWhere does that.
  if (changes.instanceUuid === null) return updateNodeWhere(db, where, changes);
  try {
    const [row] = await updatePrepared<Record<string, unknown>>(
      db,
      'nodes',
      recordToColumns(changes, NODE_JSON_COLUMNS),
      where,
      { setSql: '"updated_at" = now()' },
    );
    return row ? rowToRecord<NodeRecord>(row) : undefined;
  } catch (error) {
    throw translateNodeError(error, changes);
  }
}

/** A PostgreSQL error of a node write → the domain error it means (others as they are). */
export function translateNodeError(
  error: unknown,
  node: { uuid?: string; name?: string | null; chassisUuid?: string | null },
): unknown {
  const constraint = isUniqueViolation(error);
  if (constraint?.includes('name')) return new DuplicateName(String(node.name));
  if (constraint?.includes('instance_uuid')) {
    return new InvalidParameterValue('instance_uuid is already associated with another node');
  }
  if (constraint?.includes('uuid')) return new NodeAlreadyExists(String(node.uuid));
  // The one foreign key a node create or update writes: its chassis.
  if (isForeignKeyViolation(error)) return new InvalidParameterValue(`Chassis ${node.chassisUuid} could not be found.`);
  return error;
}
