import type { Knex } from 'knex';
import { ConductorStore } from './conductor-store.js';
import { InventoryStore } from './inventory-store.js';
import { NodeStore } from './node-store.js';
import { PortStore } from './port-store.js';

export interface Stores {
  nodes: NodeStore;
  ports: PortStore;
  conductors: ConductorStore;
  inventories: InventoryStore;
}

export function createStores(db: Knex): Stores {
  return {
    nodes: new NodeStore(db),
    ports: new PortStore(db),
    conductors: new ConductorStore(db),
    inventories: new InventoryStore(db),
  };
}
