import type { Knex } from 'knex';
import { ConductorStore } from './conductor-store.js';
import { NodeStore } from './node-store.js';
import { PortStore } from './port-store.js';
import { createResourceStores, type ResourceStores } from './resource-stores.js';

export interface Stores extends ResourceStores {
  nodes: NodeStore;
  ports: PortStore;
  conductors: ConductorStore;
}

export function createStores(db: Knex): Stores {
  return {
    nodes: new NodeStore(db),
    ports: new PortStore(db),
    conductors: new ConductorStore(db),
    ...createResourceStores(db),
  };
}
