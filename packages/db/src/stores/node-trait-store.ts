import type { Knex } from 'knex';

/** SQL for node_traits: a node's traits, kept sorted by name. */
export class NodeTraitStore {
  constructor(private readonly db: Knex) {}

  async list(nodeId: number): Promise<string[]> {
    const rows = await this.db('node_traits').where({ node_id: nodeId }).orderBy('trait').select('trait');
    return rows.map((row: { trait: string }) => row.trait);
  }

  /** The traits of several nodes in one query (a page of a node list). */
  async listMany(nodeIds: readonly number[]): Promise<Map<number, string[]>> {
    const byNode = new Map<number, string[]>(nodeIds.map((id) => [id, []]));
    if (nodeIds.length === 0) return byNode;
    const rows = await this.db('node_traits')
      .whereIn('node_id', nodeIds as number[])
      .orderBy(['node_id', 'trait'])
      .select('node_id', 'trait');
    for (const row of rows as Array<{ node_id: number; trait: string }>) byNode.get(row.node_id)?.push(row.trait);
    return byNode;
  }

  /** Replaces every trait of the node, in one transaction. */
  async replace(nodeId: number, traits: readonly string[]): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('node_traits').where({ node_id: nodeId }).delete();
      if (traits.length > 0) {
        await trx('node_traits').insert([...new Set(traits)].map((trait) => ({ node_id: nodeId, trait })));
      }
    });
  }

  /** Adds one trait; adding a trait the node has is a no-op. */
  async add(nodeId: number, trait: string): Promise<void> {
    await this.db('node_traits').insert({ node_id: nodeId, trait }).onConflict(['node_id', 'trait']).ignore();
  }

  /** Removes one trait; false when the node did not have it. */
  async remove(nodeId: number, trait: string): Promise<boolean> {
    return (await this.db('node_traits').where({ node_id: nodeId, trait }).delete()) > 0;
  }

  async count(nodeId: number): Promise<number> {
    const [row] = await this.db('node_traits').where({ node_id: nodeId }).count<{ count: string }[]>({ count: '*' });
    return Number(row?.count ?? 0);
  }
}
