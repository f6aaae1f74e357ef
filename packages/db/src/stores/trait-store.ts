import type { Knex } from 'knex';

/**
 * SQL for a table of traits owned by another row (node_traits by node_id,
 * runbook_traits by runbook_id): the owner's traits, kept sorted by name.
 */
export class TraitStore {
  constructor(
    protected readonly db: Knex,
    private readonly table: string,
    private readonly ownerColumn: string,
  ) {}

  async list(ownerId: number): Promise<string[]> {
    const rows = await this.db(this.table)
      .where({ [this.ownerColumn]: ownerId })
      .orderBy('trait')
      .select('trait');
    return rows.map((row: { trait: string }) => row.trait);
  }

  /** The traits of several owners in one query (a page of a list). */
  async listMany(ownerIds: readonly number[]): Promise<Map<number, string[]>> {
    const byOwner = new Map<number, string[]>(ownerIds.map((id) => [id, []]));
    if (ownerIds.length === 0) return byOwner;
    const rows = await this.db(this.table)
      .whereIn(this.ownerColumn, ownerIds as number[])
      .orderBy([this.ownerColumn, 'trait'])
      .select(`${this.ownerColumn} as owner_id`, 'trait');
    for (const row of rows as Array<{ owner_id: number; trait: string }>) byOwner.get(row.owner_id)?.push(row.trait);
    return byOwner;
  }

  /** Replaces every trait of the owner, in one transaction. */
  async replace(ownerId: number, traits: readonly string[]): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx(this.table)
        .where({ [this.ownerColumn]: ownerId })
        .delete();
      if (traits.length > 0) {
        await trx(this.table).insert([...new Set(traits)].map((trait) => ({ [this.ownerColumn]: ownerId, trait })));
      }
    });
  }

  /** Adds one trait; adding a trait the owner has is a no-op. */
  async add(ownerId: number, trait: string): Promise<void> {
    await this.db(this.table)
      .insert({ [this.ownerColumn]: ownerId, trait })
      .onConflict([this.ownerColumn, 'trait'])
      .ignore();
  }

  /** Removes one trait; false when the owner did not have it. */
  async remove(ownerId: number, trait: string): Promise<boolean> {
    return (
      (await this.db(this.table)
        .where({ [this.ownerColumn]: ownerId, trait })
        .delete()) > 0
    );
  }

  async count(ownerId: number): Promise<number> {
    const [row] = await this.db(this.table)
      .where({ [this.ownerColumn]: ownerId })
      .count<{ count: string }[]>({ count: '*' });
    return Number(row?.count ?? 0);
  }
}
