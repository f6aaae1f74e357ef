import type { JsonObject } from '@bmaas/common';
import type { Knex } from 'knex';

/** What a ramdisk reported about a node: its inventory and the rest of its data (plugin data). */
export interface NodeInventory {
  nodeId: number;
  inventory: JsonObject;
  pluginData: JsonObject;
  createdAt: Date;
  updatedAt: Date | null;
}

/** SQL for node_inventory: one row per node, replaced by each inspection. */
export class InventoryStore {
  constructor(private readonly db: Knex) {}

  /** Stores the node's inventory, replacing the one of an earlier inspection. */
  async save(nodeId: number, inventory: JsonObject, pluginData: JsonObject): Promise<void> {
    await this.db('node_inventory')
      .insert({ node_id: nodeId, inventory: JSON.stringify(inventory), plugin_data: JSON.stringify(pluginData) })
      .onConflict('node_id')
      .merge({
        inventory: JSON.stringify(inventory),
        plugin_data: JSON.stringify(pluginData),
        updated_at: this.db.fn.now(),
      });
  }

  async get(nodeId: number): Promise<NodeInventory | undefined> {
    const row = await this.db('node_inventory').where({ node_id: nodeId }).first();
    if (!row) return undefined;
    return {
      nodeId: row.node_id,
      inventory: row.inventory,
      pluginData: row.plugin_data,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
}
