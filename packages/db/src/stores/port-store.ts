import {
  type BootLookupRecord,
  MACAlreadyExists,
  NodeNotFound,
  PortAlreadyExists,
  type PortRecord,
  ResourceAlreadyExists,
  TurnBatcher,
} from '@bmaas/common';
import type { Knex } from 'knex';
import { recordToColumns, rowToRecord } from './case.js';
import { insertRecords } from './insert-many.js';
import { applyKeysetPage } from './keyset-page.js';
import { isForeignKeyViolation, isUniqueViolation } from './pg-errors.js';
import { insertPrepared, queryPrepared } from './prepared-query.js';

const JSON_COLUMNS = new Set(['local_link_connection', 'extra']);
const PORT_COLUMNS = 'ports.*';

/** The port columns a caller may set on create and change later. */
type PortSettableField =
  | 'pxeEnabled'
  | 'physicalNetwork'
  | 'localLinkConnection'
  | 'extra'
  | 'name'
  | 'portgroupUuid'
  | 'isSmartnic'
  | 'description'
  | 'vendor'
  | 'category'
  | 'availableForDynamicPortgroup';

export type NewPort = Pick<PortRecord, 'uuid' | 'address' | 'nodeId'> & Partial<Pick<PortRecord, PortSettableField>>;
export type PortChanges = Partial<Pick<PortRecord, 'address' | 'nodeId' | PortSettableField>>;

export interface PortListQuery {
  nodeId?: number;
  address?: string;
  portgroupUuid?: string;
  /** Only ports of nodes in these conductor groups (lower-cased). */
  conductorGroups?: readonly string[];
  limit: number;
  marker?: string;
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

export const PORT_SORT_EXPRESSIONS: Readonly<Record<string, string>> = {
  id: 'ports.id',
  uuid: 'ports.uuid',
  address: 'ports.address',
  created_at: 'ports.created_at',
  updated_at: "coalesce(ports.updated_at, '-infinity')",
  name: "coalesce(ports.name, '')",
  pxe_enabled: 'ports.pxe_enabled',
  is_smartnic: 'ports.is_smartnic',
  physical_network: "coalesce(ports.physical_network, '')",
};

/** An insert of ports answering the rows with their node's uuid, in the same statement. */
function withNodeUuid(insert: string): string {
  return (
    `with inserted as (${insert} returning *) ` +
    'select inserted.*, nodes.uuid as node_uuid from inserted join nodes on nodes.id = inserted.node_id'
  );
}

/** SQL for the ports table; records carry their node's uuid. */
export class PortStore {
  /** Boot lookups asked for while the previous one runs go together, as one query (bootLookup). */
  private readonly bootLookups = new TurnBatcher((addresses: string[]) => this.bootLookupMany(addresses), {
    maxInFlight: 1,
  });

  constructor(private readonly db: Knex) {}

  private select(): Knex.QueryBuilder {
    return this.db('ports').join('nodes', 'nodes.id', 'ports.node_id').select(PORT_COLUMNS, 'nodes.uuid as node_uuid');
  }

  async create(port: NewPort): Promise<PortRecord> {
    try {
      // One round trip (enrolment creates thousands): the insert and its node's uuid in one statement.
      const [row] = await insertPrepared<Record<string, unknown>>(
        this.db,
        'ports',
        recordToColumns({ ...port }, JSON_COLUMNS),
        withNodeUuid,
      );
      return rowToRecord<PortRecord>(row as Record<string, unknown>);
    } catch (error) {
      throw this.translate(error, port);
    }
  }

  /**
   * Creates several ports with multi-row inserts (insertMany), each carrying
   * its node's uuid: the records in the order of `ports`. A conflict is the
   * error create gives for the offending port, its index in `ports` in the
   * error's details (`index`). Run it on a transaction's store when the ports
   * must go in all together.
   */
  createMany(ports: readonly NewPort[]): Promise<PortRecord[]> {
    return insertRecords<NewPort, PortRecord>(this.db, 'ports', ports, {
      jsonColumns: JSON_COLUMNS,
      translate: (error, port) => this.translate(error, port),
      wrap: withNodeUuid,
    });
  }

  async getById(id: number): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.id', id).first();
    return row ? rowToRecord<PortRecord>(row) : undefined;
  }

  async getByUuid(uuid: string): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.uuid', uuid).first();
    return row ? rowToRecord<PortRecord>(row) : undefined;
  }

  async getByName(name: string): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.name', name).first();
    return row ? rowToRecord<PortRecord>(row) : undefined;
  }

  async getByAddress(address: string): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.address', address).first();
    return row ? rowToRecord<PortRecord>(row) : undefined;
  }

  async list(query: PortListQuery): Promise<PortRecord[]> {
    const q = this.select();
    if (query.nodeId !== undefined) q.where('ports.node_id', query.nodeId);
    if (query.address !== undefined) q.where('ports.address', query.address);
    if (query.portgroupUuid !== undefined) q.where('ports.portgroup_uuid', query.portgroupUuid);
    if (query.conductorGroups !== undefined) q.whereIn('nodes.conductor_group', query.conductorGroups);
    applyKeysetPage(q, 'ports', PORT_SORT_EXPRESSIONS, query);
    return (await q).map((row: Record<string, unknown>) => rowToRecord<PortRecord>(row));
  }

  /** Puts every port of a portgroup on the portgroup's physical network. */
  async setPortgroupPhysicalNetwork(portgroupUuid: string, physicalNetwork: string | null): Promise<void> {
    await this.db('ports')
      .where('portgroup_uuid', portgroupUuid)
      .update({ physical_network: physicalNetwork, updated_at: this.db.fn.now() });
  }

  async listByNode(nodeId: number): Promise<PortRecord[]> {
    // Every shared lock on the boot path reads the node's ports: a prepared statement.
    const rows = await queryPrepared<Record<string, unknown>>(this.db, 'bmaas_ports_by_node', PORTS_BY_NODE_SQL, [
      nodeId,
    ]);
    return rows.map((row) => rowToRecord<PortRecord>(row));
  }

  /** Ports of several nodes at once (address lists for many nodes). */
  async listByAddresses(addresses: readonly string[]): Promise<PortRecord[]> {
    const rows = await this.select()
      .whereIn('ports.address', addresses as string[])
      .orderBy('ports.id');
    return rows.map((row: Record<string, unknown>) => rowToRecord<PortRecord>(row));
  }

  async update(id: number, changes: PortChanges): Promise<PortRecord | undefined> {
    try {
      const count = await this.db('ports')
        .where({ id })
        .update(Object.assign(recordToColumns(changes, JSON_COLUMNS), { updated_at: this.db.fn.now() }));
      return count ? this.getById(id) : undefined;
    } catch (error) {
      throw this.translate(error, changes);
    }
  }

  async destroy(id: number): Promise<boolean> {
    return (await this.db('ports').where({ id }).delete()) > 0;
  }

  /**
   * The boot path's query: MAC -> the node facts the API needs to route and
   * gate a boot request. One statement over the unique index on ports.address
   * and the nodes primary key. Under load, the lookups asked for while the
   * previous one runs are answered together by one query (bootLookupMany);
   * a lone lookup goes at the end of its event-loop turn, as one statement.
   */
  bootLookup(address: string): Promise<BootLookupRecord | undefined> {
    return this.bootLookups.get(address);
  }

  /** bootLookup for several MACs in one query: one answer per address, in order. */
  async bootLookupMany(addresses: readonly string[]): Promise<Array<BootLookupRecord | undefined>> {
    if (addresses.length === 1) {
      const rows = await queryPrepared<BootLookupRecord>(this.db, 'bmaas_boot_lookup', BOOT_LOOKUP_PREPARED, [
        addresses[0],
      ]);
      return [rows[0]];
    }
    const rows = await queryPrepared<BootLookupRecord & { address: string }>(
      this.db,
      'bmaas_boot_lookup_many',
      BOOT_LOOKUP_MANY_SQL,
      [addresses],
    );
    const byAddress = new Map(rows.map(({ address, ...record }) => [address, record]));
    return addresses.map((address) => byAddress.get(address));
  }

  /**
   * Ports' MACs with their lookup records, `limit` at a time in port id
   * order after `afterPortId`: what the API's MAC index starts from, a page
   * at a time so that a large fleet does not hold the event loop.
   */
  bootLookupPage(
    afterPortId: number,
    limit: number,
  ): Promise<Array<BootLookupRecord & { address: string; portId: number }>> {
    return queryPrepared(this.db, 'bmaas_boot_lookup_page', BOOT_LOOKUP_PAGE_SQL, [afterPortId, limit]);
  }

  /** The lookup records of every port of `nodeIds`, MAC included. */
  bootLookupOfNodes(nodeIds: readonly number[]): Promise<Array<BootLookupRecord & { address: string }>> {
    return queryPrepared(this.db, 'bmaas_boot_lookup_of_nodes', BOOT_LOOKUP_OF_NODES_SQL, [nodeIds]);
  }

  private translate(
    error: unknown,
    port: { address?: string; uuid?: string; nodeId?: number; name?: string | null },
  ): unknown {
    const constraint = isUniqueViolation(error);
    if (constraint?.includes('address')) return new MACAlreadyExists(String(port.address));
    if (constraint?.includes('uuid')) return new PortAlreadyExists(String(port.uuid));
    if (constraint?.includes('name')) return new ResourceAlreadyExists(`A port with name ${port.name} already exists.`);
    if (isForeignKeyViolation(error)) return new NodeNotFound(String(port.nodeId));
    return error;
  }
}

/**
 * A port from PostgreSQL's JSON of its row (json_agg in NodeStore's
 * one-round-trip reads): the same record as the query builder's.
 */
export function portFromJson(row: Record<string, unknown>, nodeUuid: string): PortRecord {
  const port = rowToRecord<PortRecord>(row);
  port.nodeUuid = nodeUuid;
  port.createdAt = new Date(row.created_at as string);
  port.updatedAt = row.updated_at === null ? null : new Date(row.updated_at as string);
  return port;
}

export const BOOT_LOOKUP_SQL = `select n.id as "nodeId", n.uuid as "nodeUuid", n.provision_state as "provisionState",
  n.driver as "driver", n.conductor_group as "conductorGroup"
  from ports p join nodes n on n.id = p.node_id where p.address = ?`;
const BOOT_LOOKUP_PREPARED = BOOT_LOOKUP_SQL.replace('?', '$1');
const BOOT_LOOKUP_MANY_SQL = `select p.address, n.id as "nodeId", n.uuid as "nodeUuid",
  n.provision_state as "provisionState", n.driver as "driver", n.conductor_group as "conductorGroup"
  from ports p join nodes n on n.id = p.node_id where p.address = any($1::text[])`;
/** MACs with their lookup records, a page at a time by port id (the API's MAC index, filled at start). */
const BOOT_LOOKUP_PAGE_SQL = BOOT_LOOKUP_MANY_SQL.replace(
  'select p.address,',
  'select p.id as "portId", p.address,',
).replace(' where p.address = any($1::text[])', ' where p.id > $1 order by p.id limit $2');
/** The lookup records of the ports of some nodes (the MAC index following changes). */
const BOOT_LOOKUP_OF_NODES_SQL = BOOT_LOOKUP_MANY_SQL.replace(
  'where p.address = any($1::text[])',
  'where p.node_id = any($1::int[])',
);
const PORTS_BY_NODE_SQL = `select ports.*, nodes.uuid as node_uuid from ports join nodes on nodes.id = ports.node_id
  where ports.node_id = $1 order by ports.id`;
