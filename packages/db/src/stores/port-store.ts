import {
  type BootLookupRecord,
  MACAlreadyExists,
  NodeNotFound,
  PortAlreadyExists,
  type PortRecord,
} from '@bmaas/common';
import type { Knex } from 'knex';
import { recordToColumns, rowToRecord } from './case.js';
import { applyKeysetPage } from './keyset-page.js';
import { isForeignKeyViolation, isUniqueViolation } from './pg-errors.js';

const JSON_COLUMNS = new Set(['local_link_connection', 'extra']);
const PORT_COLUMNS = 'ports.*';

export type NewPort = Pick<PortRecord, 'uuid' | 'address' | 'nodeId'> &
  Partial<Pick<PortRecord, 'pxeEnabled' | 'physicalNetwork' | 'localLinkConnection' | 'extra' | 'name'>>;
export type PortChanges = Partial<
  Pick<PortRecord, 'address' | 'nodeId' | 'pxeEnabled' | 'physicalNetwork' | 'localLinkConnection' | 'extra' | 'name'>
>;

export interface PortListQuery {
  nodeId?: number;
  address?: string;
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
};

/** SQL for the ports table; records carry their node's uuid. */
export class PortStore {
  constructor(private readonly db: Knex) {}

  private select(): Knex.QueryBuilder {
    return this.db('ports').join('nodes', 'nodes.id', 'ports.node_id').select(PORT_COLUMNS, 'nodes.uuid as node_uuid');
  }

  async create(port: NewPort): Promise<PortRecord> {
    try {
      const [row] = await this.db('ports')
        .insert(recordToColumns({ ...port }, JSON_COLUMNS))
        .returning('id');
      return (await this.getById((row as { id: number }).id)) as PortRecord;
    } catch (error) {
      throw this.translate(error, port);
    }
  }

  async getById(id: number): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.id', id).first();
    return row ? rowToRecord<PortRecord>(row) : undefined;
  }

  async getByUuid(uuid: string): Promise<PortRecord | undefined> {
    const row = await this.select().where('ports.uuid', uuid).first();
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
    applyKeysetPage(q, 'ports', PORT_SORT_EXPRESSIONS, query);
    return (await q).map((row: Record<string, unknown>) => rowToRecord<PortRecord>(row));
  }

  async listByNode(nodeId: number): Promise<PortRecord[]> {
    const rows = await this.select().where('ports.node_id', nodeId).orderBy('ports.id');
    return rows.map((row: Record<string, unknown>) => rowToRecord<PortRecord>(row));
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
        .update({ ...recordToColumns(changes, JSON_COLUMNS), updated_at: this.db.fn.now() });
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
   * and the nodes primary key.
   */
  async bootLookup(address: string): Promise<BootLookupRecord | undefined> {
    const result = await this.db.raw<{ rows: BootLookupRecord[] }>(BOOT_LOOKUP_SQL, [address]);
    return result.rows[0];
  }

  private translate(error: unknown, port: { address?: string; uuid?: string; nodeId?: number }): unknown {
    const constraint = isUniqueViolation(error);
    if (constraint?.includes('address')) return new MACAlreadyExists(String(port.address));
    if (constraint?.includes('uuid')) return new PortAlreadyExists(String(port.uuid));
    if (isForeignKeyViolation(error)) return new NodeNotFound(String(port.nodeId));
    return error;
  }
}

export const BOOT_LOOKUP_SQL = `select n.id as "nodeId", n.uuid as "nodeUuid", n.provision_state as "provisionState",
  n.driver as "driver", n.conductor_group as "conductorGroup"
  from ports p join nodes n on n.id = p.node_id where p.address = ?`;
