import type { Knex } from 'knex';

/** Counts over the nodes: for the metrics scrape, the shards resource and the tests. */
export class NodeCountStore {
  constructor(private readonly db: Knex) {}

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
}
