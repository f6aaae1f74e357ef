import { randomUUID } from 'node:crypto';
import { type HealthState, type NodeRecord, type PortRecord, TurnBatcher } from '@bmaas/common';
import type { Knex } from 'knex';
import { recordToColumns, rowToRecord, toSnake } from './case.js';
import { detailOf, insertRecords, withDetails } from './insert-many.js';
import { applyKeysetPage } from './keyset-page.js';
import {
  NODE_JSON_COLUMNS,
  NODE_WITH_PORTS_SQL,
  NODES_WITH_PORTS_SQL,
  type NodeChanges,
  type NodeWithPorts,
  readManyByUuid,
  translateNodeError,
  UUID,
  updateNodeWhere,
  withPorts,
} from './node-rows.js';
import { type NewPort, PortStore } from './port-store.js';
import { insertPrepared, queryPrepared } from './prepared-query.js';

const NODE_BY_UUID_SQL = 'select * from nodes where uuid = $1 limit 1';
const NODE_ID_BY_SQL = {
  uuid: 'select id from nodes where uuid = $1',
  name: 'select id from nodes where name = $1',
} as const;
const PREPARED_BY_WITH_PORTS_SQL = NODE_WITH_PORTS_SQL.replace(
  'where n.uuid = $1',
  'where n.id = any($1::int[]) and n.conductor_affinity = $2 and n.provision_state = any($3::text[])',
);

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
      | 'provisionState'
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

/**
 * The nodes table's records: create, read, list, update, delete. Locks are
 * NodeLockStore's, the periodic tasks' queries PeriodicNodeQueries', counts NodeCountStore's.
 */
export class NodeStore {
  /** Reads of a node with its ports asked for while the previous one runs go together, as one query. */
  private readonly withPortsReads = new TurnBatcher((uuids: string[]) => this.getManyByUuidWithPorts(uuids), {
    maxInFlight: 1,
  });

  constructor(private readonly db: Knex) {}

  async create(node: NewNode): Promise<NodeRecord> {
    try {
      const [row] = await insertPrepared<Record<string, unknown>>(
        this.db,
        'nodes',
        recordToColumns({ ...node }, NODE_JSON_COLUMNS),
      );
      return rowToRecord<NodeRecord>(row as Record<string, unknown>);
    } catch (error) {
      throw translateNodeError(error, node);
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
      jsonColumns: NODE_JSON_COLUMNS,
      translate: (error, node) => translateNodeError(error, node),
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
          .insert(recordToColumns({ ...node }, NODE_JSON_COLUMNS))
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
      throw translateNodeError(error, node);
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
  getByUuidWithPorts(uuid: string): Promise<NodeWithPorts | undefined> {
    return this.withPortsReads.get(uuid);
  }

  /**
   * getByUuidWithPorts for several nodes in one query (shared locks taken
   * during one event-loop turn are read together): one answer per uuid, in
   * order. Strings that are not UUIDs find nothing.
   */
  async getManyByUuidWithPorts(uuids: readonly string[]): Promise<Array<NodeWithPorts | undefined>> {
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
    return readManyByUuid(this.db, uuids, 'bmaas_nodes_with_ports', NODES_WITH_PORTS_SQL, withPorts);
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
  ): Promise<NodeWithPorts[]> {
    const rows = await queryPrepared<Record<string, unknown>>(
      this.db,
      'bmaas_nodes_prepared_by_with_ports',
      PREPARED_BY_WITH_PORTS_SQL,
      [ids, conductorId, states],
    );
    return rows.map(withPorts);
  }

  /**
   * The id of the node with this uuid or name (`by`), or undefined: what a port's
   * create and move need of its node. The whole row is a hundred columns that
   * pg would describe and parse, once per port of an enrolment.
   */
  async idOf(by: 'uuid' | 'name', value: string): Promise<number | undefined> {
    const [row] = await queryPrepared<{ id: number }>(this.db, `bmaas_node_id_by_${by}`, NODE_ID_BY_SQL[by], [value]);
    return row?.id;
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
   * Updates a node. With `expect`, the update applies only while those columns
   * still hold the given values (compare-and-set); returns undefined otherwise.
   */
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

  async update(id: number, changes: NodeChanges, expect: NodeChanges = {}): Promise<NodeRecord | undefined> {
    const where: Record<string, unknown> = { id };
    for (const [key, value] of Object.entries(expect)) where[toSnake(key)] = value;
    return updateNodeWhere(this.db, where, changes);
  }

  async destroy(id: number): Promise<boolean> {
    return (await this.db('nodes').where({ id }).delete()) > 0;
  }
}
