import { randomUUID } from 'node:crypto';
import {
  DuplicateName,
  type HealthState,
  InvalidParameterValue,
  NodeAlreadyExists,
  type NodeRecord,
  type PortRecord,
  TurnBatcher,
} from '@bmaas/common';
import type { Knex } from 'knex';
import { recordToColumns, rowToRecord, toSnake } from './case.js';
import { detailOf, insertRecords, withDetails } from './insert-many.js';
import { applyKeysetPage } from './keyset-page.js';
import { isForeignKeyViolation, isUniqueViolation } from './pg-errors.js';
import { type NewPort, PortStore, portFromJson } from './port-store.js';
import { insertPrepared, queryPrepared, updatePrepared } from './prepared-query.js';

const JSON_COLUMNS = new Set([
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
const NODE_BY_UUID_SQL = 'select * from nodes where uuid = $1 limit 1';
const NODE_WITH_PORTS_SQL = `select n.*,
  coalesce((select json_agg(p order by p.id) from ports p where p.node_id = n.id), '[]'::json) as bmaas_ports
  from nodes n where n.uuid = $1`;
const NODES_WITH_PORTS_SQL = NODE_WITH_PORTS_SQL.replace('where n.uuid = $1', 'where n.uuid = any($1::uuid[])');
const PREPARED_BY_WITH_PORTS_SQL = NODE_WITH_PORTS_SQL.replace(
  'where n.uuid = $1',
  'where n.id = any($1::int[]) and n.conductor_affinity = $2 and n.provision_state = any($3::text[])',
);
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

export type NewNode = Pick<
  NodeRecord,
  'uuid' | 'driver' | 'bootInterface' | 'deployInterface' | 'powerInterface' | 'managementInterface'
> &
  Partial<
    Pick<
      NodeRecord,
      | 'name'
      | 'driverInfo'
      | 'instanceInfo'
      | 'instanceUuid'
      | 'instanceName'
      | 'properties'
      | 'extra'
      | 'conductorGroup'
      | 'resourceClass'
      | 'description'
      | 'automatedClean'
      | 'maintenance'
      | 'maintenanceReason'
      | 'biosInterface'
      | 'consoleInterface'
      | 'firmwareInterface'
      | 'inspectInterface'
      | 'networkInterface'
      | 'raidInterface'
      | 'rescueInterface'
      | 'storageInterface'
      | 'vendorInterface'
      | 'owner'
      | 'lessee'
      | 'protected'
      | 'protectedReason'
      | 'retired'
      | 'retiredReason'
      | 'networkData'
      | 'disablePowerOff'
      | 'shard'
      | 'parentNode'
      | 'bootMode'
      | 'secureBoot'
      | 'chassisUuid'
    >
  >;

/** How a periodic task narrows its nodes (listForPeriodicTask); every condition given must hold. */
export interface PeriodicNodeFilter {
  maintenance?: boolean;
  fault?: string;
  /** No lock held on it. */
  unreserved?: boolean;
  /** No power change under way. */
  noTargetPowerState?: boolean;
  provisionStateIn?: readonly string[];
  provisionStateNotIn?: readonly string[];
  /** Prepared by a conductor (conductor_affinity), and not by this one (its id). */
  preparedByOtherThan?: number;
  /**
   * In one of these states for longer than its number of seconds as of `now`,
   * counted from provision_updated_at (else updated_at, else created_at).
   */
  inStateLongerThan?: { seconds: Readonly<Record<string, number>>; now: Date };
}

/** A node as a periodic task lists it: enough to route it to its conductor. */
export interface PeriodicNodeRow {
  id: number;
  uuid: string;
  driver: string;
  conductorGroup: string;
}

/** Fields a store update may set (never id, uuid or created_at). */
export type NodeChanges = Partial<Omit<NodeRecord, 'id' | 'uuid' | 'createdAt' | 'updatedAt'>>;

export interface NodeListQuery {
  provisionState?: string;
  driver?: string;
  conductorGroup?: string;
  maintenance?: boolean;
  associated?: boolean;
  resourceClass?: string;
  reservation?: string;
  owner?: string;
  lessee?: string;
  /** Nodes owned by or leased to this project. */
  project?: string;
  instanceUuid?: string;
  instanceName?: string;
  retired?: boolean;
  fault?: string;
  /** Any of these shards. */
  shards?: readonly string[];
  /** true: a shard is set; false: none is. */
  sharded?: boolean;
  descriptionContains?: string;
  /** Only the children of this node (its uuid); without it and includeChildren, child nodes are left out. */
  parentNode?: string;
  includeChildren?: boolean;
  chassisUuid?: string;
  limit: number;
  /** uuid of the last item of the previous page. */
  marker?: string;
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

export const NODE_SORT_EXPRESSIONS: Readonly<Record<string, string>> = {
  id: 'nodes.id',
  uuid: 'nodes.uuid',
  name: "coalesce(nodes.name, '')",
  created_at: 'nodes.created_at',
  updated_at: "coalesce(nodes.updated_at, '-infinity')",
  provision_state: 'nodes.provision_state',
  provision_updated_at: "coalesce(nodes.provision_updated_at, '-infinity')",
  driver: 'nodes.driver',
  conductor_group: 'nodes.conductor_group',
  maintenance: 'nodes.maintenance',
};

/** pg_advisory_xact_lock key serialising discovery enrolments (any constant; "bmaasdsc" in ASCII). */
const DISCOVERY_LOCK_KEY = '7092590460232443747';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A node, its ports and the version of its row when read: what a lock taken by its first write checks. */
export interface VersionedNode {
  node: NodeRecord;
  ports: PortRecord[];
  /** The row's xmin, as text: any update of the node since the read changes it. */
  version: string;
}

/**
 * A node row carrying its ports as JSON (bmaas_ports) → the node and its port
 * records. A versioned read's bmaas_version is left out of the node too, so
 * that the row is copied once.
 */
function withPorts(row: Record<string, unknown>): { node: NodeRecord; ports: PortRecord[] } {
  const { bmaas_ports: portRows, bmaas_version: _version, ...nodeRow } = row;
  const node = rowToRecord<NodeRecord>(nodeRow);
  return { node, ports: (portRows as Array<Record<string, unknown>>).map((port) => portFromJson(port, node.uuid)) };
}

/** SQL for the nodes table; returns plain NodeRecords. */
export class NodeStore {
  /** Reads of a node with its ports asked for while the previous one runs go together, as one query. */
  private readonly withPortsReads = new TurnBatcher((uuids: string[]) => this.getManyByUuidWithPorts(uuids), {
    maxInFlight: 1,
  });
  /** The same for the reads of locks taken by their first write (getVersionedByUuidWithPorts). */
  private readonly versionedReads = new TurnBatcher((uuids: string[]) => this.getManyVersionedByUuidWithPorts(uuids), {
    maxInFlight: 1,
  });

  constructor(private readonly db: Knex) {}

  async create(node: NewNode): Promise<NodeRecord> {
    try {
      const [row] = await insertPrepared<Record<string, unknown>>(
        this.db,
        'nodes',
        recordToColumns({ ...node }, JSON_COLUMNS),
      );
      return rowToRecord<NodeRecord>(row as Record<string, unknown>);
    } catch (error) {
      throw this.translate(error, node);
    }
  }

  /**
   * Creates several nodes with multi-row inserts (insertMany): the records in
   * the order of `nodes`. A conflict is the error create gives for the
   * offending node, its index in `nodes` in the error's details (`index`).
   * Not atomic by itself when the rows take more than one statement: run
   * it on a transaction's store (createManyWithPorts does).
   */
  createMany(nodes: readonly NewNode[]): Promise<NodeRecord[]> {
    return insertRecords<NewNode, NodeRecord>(this.db, 'nodes', nodes, {
      jsonColumns: JSON_COLUMNS,
      translate: (error, node) => this.translate(error, node),
    });
  }

  /**
   * Bulk enrolment: the nodes, then every node's ports, each with multi-row
   * inserts, in one transaction (all or nothing). A conflict is the error
   * create of that node or PortStore.create of that port gives, with its
   * position in the error's details: `node` (index in `items`) and, for a
   * port, `port` (index in that node's ports).
   */
  async createManyWithPorts(
    items: ReadonlyArray<{ node: NewNode; ports: ReadonlyArray<Omit<NewPort, 'nodeId'>> }>,
  ): Promise<Array<{ node: NodeRecord; ports: PortRecord[] }>> {
    const positions = items.flatMap((item, node) => item.ports.map((_, port) => ({ node, port })));
    return this.db.transaction(async (trx) => {
      let nodes: NodeRecord[];
      try {
        nodes = await new NodeStore(trx).createMany(items.map((item) => item.node));
      } catch (error) {
        throw withDetails(error, { node: detailOf(error, 'index') });
      }
      const ports = items.flatMap((item, index) =>
        item.ports.map((port) => Object.assign({}, port, { nodeId: (nodes[index] as NodeRecord).id })),
      );
      let created: PortRecord[];
      try {
        created = await new PortStore(trx).createMany(ports);
      } catch (error) {
        const index = detailOf(error, 'index');
        throw withDetails(error, index === undefined ? {} : { ...positions[index] });
      }
      const byNode = new Map<number, PortRecord[]>(nodes.map((node) => [node.id, []]));
      for (const port of created) byNode.get(port.nodeId)?.push(port);
      return nodes.map((node) => ({ node, ports: byNode.get(node.id) ?? [] }));
    });
  }

  /**
   * Discovery's enrolment: creates the node and a port per MAC in one
   * transaction, unless one of the MACs is already a port, in which case that
   * port's node is returned and nothing is created. Enrolments are serialised
   * across every API process (a transaction-scoped advisory lock), so two
   * posts of the same machine never make two nodes.
   */
  async createWithPortsUnlessKnown(
    node: NewNode,
    ports: ReadonlyArray<{ address: string; pxeEnabled: boolean }>,
  ): Promise<{ node: NodeRecord; created: boolean }> {
    try {
      return await this.db.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(?)', [DISCOVERY_LOCK_KEY]);
        const known = await trx('ports')
          .whereIn(
            'address',
            ports.map((port) => port.address),
          )
          .first('node_id');
        if (known) {
          const row = await trx('nodes').where({ id: known.node_id }).first();
          return { node: rowToRecord<NodeRecord>(row), created: false };
        }
        const [row] = await trx('nodes')
          .insert(recordToColumns({ ...node }, JSON_COLUMNS))
          .returning('*');
        if (ports.length > 0) {
          await trx('ports').insert(
            ports.map((port) => ({
              uuid: randomUUID(),
              address: port.address,
              node_id: row.id,
              pxe_enabled: port.pxeEnabled,
            })),
          );
        }
        return { node: rowToRecord<NodeRecord>(row), created: true };
      });
    } catch (error) {
      throw this.translate(error, node);
    }
  }

  async getById(id: number): Promise<NodeRecord | undefined> {
    const row = await this.db('nodes').where({ id }).first();
    return row ? rowToRecord<NodeRecord>(row) : undefined;
  }

  async getByUuid(uuid: string): Promise<NodeRecord | undefined> {
    // The read of every shared lock, so once per boot config request: a prepared statement.
    const [row] = await queryPrepared<Record<string, unknown>>(this.db, 'bmaas_node_by_uuid', NODE_BY_UUID_SQL, [uuid]);
    return row ? rowToRecord<NodeRecord>(row) : undefined;
  }

  /**
   * A node and its ports (by id) in one round trip: the read of every shared
   * lock, so of every boot config request, where a second query would be a
   * second round trip to PostgreSQL and back. Under load, the reads asked
   * for while the previous one runs are answered together by one query
   * (getManyByUuidWithPorts); a lone read goes at the end of its event-loop
   * turn, as one statement.
   */
  getByUuidWithPorts(uuid: string): Promise<{ node: NodeRecord; ports: PortRecord[] } | undefined> {
    return this.withPortsReads.get(uuid);
  }

  /**
   * getByUuidWithPorts for several nodes in one query (shared locks taken
   * during one event-loop turn are read together): one answer per uuid, in
   * order. Strings that are not UUIDs find nothing.
   */
  async getManyByUuidWithPorts(
    uuids: readonly string[],
  ): Promise<Array<{ node: NodeRecord; ports: PortRecord[] } | undefined>> {
    const wanted = uuids.filter((uuid) => UUID.test(uuid));
    if (wanted.length === 1 && uuids.length === 1) {
      const [row] = await queryPrepared<Record<string, unknown>>(
        this.db,
        'bmaas_node_with_ports',
        NODE_WITH_PORTS_SQL,
        wanted,
      );
      return [row ? withPorts(row) : undefined];
    }
    return this.readManyByUuid(uuids, 'bmaas_nodes_with_ports', NODES_WITH_PORTS_SQL, withPorts);
  }

  /**
   * The nodes `uuids` read by one named statement taking them as `$1`
   * (strings that are not UUIDs find nothing), each row made into an answer
   * by `answer`: one answer per uuid, in order.
   */
  private async readManyByUuid<T extends { node: NodeRecord }>(
    uuids: readonly string[],
    name: string,
    sql: string,
    answer: (row: Record<string, unknown>) => T,
  ): Promise<Array<T | undefined>> {
    const wanted = uuids.filter((uuid) => UUID.test(uuid));
    const rows = wanted.length === 0 ? [] : await queryPrepared<Record<string, unknown>>(this.db, name, sql, [wanted]);
    const byUuid = new Map<string, T>();
    for (const row of rows) {
      const read = answer(row);
      byUuid.set(read.node.uuid, read);
    }
    return uuids.map((uuid) => byUuid.get(uuid.toLowerCase()));
  }

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
    return this.readManyByUuid(uuids, 'bmaas_versioned_nodes_with_ports', VERSIONED_NODES_WITH_PORTS_SQL, (row) =>
      Object.assign(withPorts(row), { version: String(row.bmaas_version) }),
    );
  }

  /**
   * Those of the nodes `ids` whose boot files conductor `conductorId`
   * prepared (conductor_affinity) and that are in one of `states`, with
   * their ports: what a conductor may soon be asked to serve.
   */
  async listPreparedByWithPorts(
    ids: readonly number[],
    conductorId: number,
    states: readonly string[],
  ): Promise<Array<{ node: NodeRecord; ports: PortRecord[] }>> {
    const rows = await queryPrepared<Record<string, unknown>>(
      this.db,
      'bmaas_nodes_prepared_by_with_ports',
      PREPARED_BY_WITH_PORTS_SQL,
      [ids, conductorId, states],
    );
    return rows.map(withPorts);
  }

  async getByName(name: string): Promise<NodeRecord | undefined> {
    const row = await this.db('nodes').where({ name }).first();
    return row ? rowToRecord<NodeRecord>(row) : undefined;
  }

  async list(query: NodeListQuery): Promise<NodeRecord[]> {
    const rows: Array<Record<string, unknown>> = await this.listQuery(query);
    return rows.map((row) => rowToRecord<NodeRecord>(row));
  }

  /** The SELECT list() runs (exposed for plan checks). */
  listQuery(query: NodeListQuery): Knex.QueryBuilder {
    const q = this.db('nodes').select('*');
    if (query.provisionState !== undefined) q.where('provision_state', query.provisionState);
    if (query.driver !== undefined) q.where('driver', query.driver);
    if (query.conductorGroup !== undefined) q.where('conductor_group', query.conductorGroup.toLowerCase());
    if (query.maintenance !== undefined) q.where('maintenance', query.maintenance);
    if (query.resourceClass !== undefined) q.where('resource_class', query.resourceClass);
    if (query.reservation !== undefined) q.where('reservation', query.reservation);
    if (query.chassisUuid !== undefined) q.where('chassis_uuid', query.chassisUuid);
    if (query.associated !== undefined) {
      if (query.associated) q.whereNotNull('instance_uuid');
      else q.whereNull('instance_uuid');
    }
    if (query.owner !== undefined) q.where('owner', query.owner);
    if (query.lessee !== undefined) q.where('lessee', query.lessee);
    if (query.project !== undefined) {
      const project = query.project;
      q.where((w) => w.where('owner', project).orWhere('lessee', project));
    }
    if (query.instanceUuid !== undefined) q.where('instance_uuid', query.instanceUuid);
    if (query.instanceName !== undefined) q.where('instance_name', query.instanceName);
    if (query.retired !== undefined) q.where('retired', query.retired);
    if (query.fault !== undefined) q.where('fault', query.fault);
    if (query.shards !== undefined) q.whereIn('shard', query.shards as string[]);
    if (query.sharded !== undefined) {
      if (query.sharded) q.whereNotNull('shard');
      else q.whereNull('shard');
    }
    if (query.descriptionContains !== undefined) {
      q.where('description', 'like', `%${query.descriptionContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    }
    if (!query.includeChildren) {
      if (query.parentNode !== undefined) q.where('parent_node', query.parentNode);
      else q.whereNull('parent_node');
    }
    applyKeysetPage(q, 'nodes', NODE_SORT_EXPRESSIONS, query);
    return q;
  }

  /**
   * Records the health a BMC reported (power sync, 1.109). Writes only a
   * change, and leaves updated_at alone: a reading is not an edit of the
   * node. Returns whether it changed.
   */
  async recordHealth(id: number, health: HealthState | null): Promise<boolean> {
    const count = await this.db('nodes')
      .where({ id })
      .whereRaw('health is distinct from ?', [health])
      .update({ health });
    return count > 0;
  }

  /**
   * Updates a node. With `expect`, the update applies only while those columns
   * still hold the given values (compare-and-set); returns undefined otherwise.
   */
  async update(id: number, changes: NodeChanges, expect: NodeChanges = {}): Promise<NodeRecord | undefined> {
    const where: Record<string, unknown> = { id };
    for (const [key, value] of Object.entries(expect)) where[toSnake(key)] = value;
    return this.updateWhere(where, changes);
  }

  /** update() where the columns of `where` (snake_case) hold its values. */
  private async updateWhere(where: Record<string, unknown>, changes: NodeChanges): Promise<NodeRecord | undefined> {
    const write = async (db: Knex | Knex.Transaction, extra: Record<string, unknown> = {}) => {
      const [row] = await db('nodes')
        .where(where)
        .update(Object.assign(recordToColumns(changes, JSON_COLUMNS), extra, { updated_at: this.db.fn.now() }))
        .returning('*');
      return row as Record<string, unknown> | undefined;
    };
    try {
      // A node whose instance goes (undeploy, a patch removing instance_uuid) loses its allocation too, as in Ironic.
      const row =
        changes.instanceUuid === null
          ? await this.db.transaction(async (trx) => {
              const updated = await write(trx, { allocation_uuid: null });
              if (updated) await trx('allocations').where({ node_id: updated.id }).delete();
              return updated;
            })
          : await write(this.db);
      return row ? rowToRecord<NodeRecord>(row) : undefined;
    } catch (error) {
      throw this.translate(error, changes);
    }
  }

  async destroy(id: number): Promise<boolean> {
    return (await this.db('nodes').where({ id }).delete()) > 0;
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
  async reserveByUuidWithPorts(
    uuid: string,
    host: string,
  ): Promise<{ node: NodeRecord; ports: PortRecord[] } | undefined> {
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
   * update(id, changes, { reservation: host }): the write of a lock holder,
   * as a named statement per column list (see updatePrepared); the row, or
   * undefined when `host` no longer holds the node.
   */
  async updateReservedBy(id: number, host: string, changes: NodeChanges): Promise<NodeRecord | undefined> {
    return this.writeWhere({ id, reservation: host }, changes);
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
    return this.writeWhere({ id, reservation: null, xmin: version }, { reservation: host, ...changes });
  }

  /** A conditional write of a lock holder, as a named statement per column list (see updatePrepared). */
  private async writeWhere(where: Record<string, unknown>, changes: NodeChanges): Promise<NodeRecord | undefined> {
    // Losing the instance also drops the allocation, in a transaction: updateWhere does that.
    if (changes.instanceUuid === null) return this.updateWhere(where, changes);
    try {
      const [row] = await updatePrepared<Record<string, unknown>>(
        this.db,
        'nodes',
        recordToColumns(changes, JSON_COLUMNS),
        where,
        { setSql: '"updated_at" = now()' },
      );
      return row ? rowToRecord<NodeRecord>(row) : undefined;
    } catch (error) {
      throw this.translate(error, changes);
    }
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

  /**
   * What a periodic task needs of the nodes of one conductor group and its
   * hardware types that pass `filter`, in id order: enough to route each one
   * (the task then locks it and reads the rest). The filter is applied in
   * SQL and only four columns travel: a conductor among thousands of nodes
   * that need nothing would otherwise read and parse them all, every minute.
   */
  async listForPeriodicTask(
    conductorGroup: string,
    drivers: readonly string[],
    filter: PeriodicNodeFilter = {},
  ): Promise<PeriodicNodeRow[]> {
    const q = this.db('nodes')
      .select('id', 'uuid', 'driver', 'conductor_group as conductorGroup')
      .where('conductor_group', conductorGroup)
      .whereIn('driver', drivers as string[]);
    if (filter.maintenance !== undefined) q.where('maintenance', filter.maintenance);
    if (filter.fault !== undefined) q.where('fault', filter.fault);
    if (filter.unreserved) q.whereNull('reservation');
    if (filter.noTargetPowerState) q.whereNull('target_power_state');
    if (filter.provisionStateIn) q.whereIn('provision_state', filter.provisionStateIn as string[]);
    if (filter.provisionStateNotIn?.length) q.whereNotIn('provision_state', filter.provisionStateNotIn as string[]);
    if (filter.preparedByOtherThan !== undefined) {
      q.whereNotNull('conductor_affinity').whereNot('conductor_affinity', filter.preparedByOtherThan);
    }
    if (filter.inStateLongerThan) {
      const { seconds, now } = filter.inStateLongerThan;
      const limits = Object.entries(seconds);
      if (limits.length === 0) q.whereRaw('false');
      else
        q.where((late) => {
          for (const [state, limit] of limits) {
            const since = new Date(now.getTime() - limit * 1000);
            late.orWhere((one) =>
              one
                .where('provision_state', state)
                .whereRaw('coalesce(provision_updated_at, updated_at, created_at) < ?', [since]),
            );
          }
        });
    }
    return q.orderBy('id');
  }

  /** Shards in use with their node count (nodes without a shard count under null), most populated first. */
  async shardCounts(): Promise<Array<{ name: string | null; count: number }>> {
    const rows = await this.db('nodes')
      .select('shard as name')
      .count<{ name: string | null; count: string }[]>({ count: '*' })
      .groupBy('shard')
      .orderBy([{ column: 'count', order: 'desc' }, { column: 'name' }]);
    return rows.map((row) => ({ name: row.name, count: Number(row.count) }));
  }

  /**
   * Nodes by provision state and by the hostname of the conductor that
   * prepared them (conductor_affinity; null when none did): one grouped
   * query over the nodes, for the metrics scrape.
   */
  async countByStateAndConductor(): Promise<
    Array<{ provisionState: string; conductor: string | null; count: number }>
  > {
    const rows = await this.db('nodes as n')
      .leftJoin('conductors as c', 'c.id', 'n.conductor_affinity')
      .select('n.provision_state as provisionState', 'c.hostname as conductor')
      .count<{ provisionState: string; conductor: string | null; count: string }[]>({ count: '*' })
      .groupBy('n.provision_state', 'c.hostname');
    return rows.map((row) => ({
      provisionState: row.provisionState,
      conductor: row.conductor,
      count: Number(row.count),
    }));
  }

  async count(): Promise<number> {
    const [row] = await this.db('nodes').count<{ count: number }[]>({ count: '*' });
    return Number(row?.count ?? 0);
  }

  private translate(
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
    if (isForeignKeyViolation(error))
      return new InvalidParameterValue(`Chassis ${node.chassisUuid} could not be found.`);
    return error;
  }
}
