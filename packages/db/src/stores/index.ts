import type { Knex } from 'knex';
import { BootPathChangeStore } from './boot-path-change-store.js';
import { ConductorStore } from './conductor-store.js';
import { HardwareSettingsStore } from './hardware-settings-store.js';
import { InventoryStore } from './inventory-store.js';
import { NodeCountStore } from './node-count-store.js';
import { NodeHistoryStore } from './node-history-store.js';
import { NodeLockStore } from './node-lock-store.js';
import { NodeStore } from './node-store.js';
import { NodeTraitStore } from './node-trait-store.js';
import { PeriodicNodeQueries } from './periodic-node-queries.js';
import { PortStore } from './port-store.js';
import { createResourceStores, type ResourceStores } from './resource-stores.js';

export interface Stores extends ResourceStores {
  nodes: NodeStore;
  nodeLocks: NodeLockStore;
  periodicNodes: PeriodicNodeQueries;
  nodeCounts: NodeCountStore;
  ports: PortStore;
  conductors: ConductorStore;
  nodeTraits: NodeTraitStore;
  nodeHistory: NodeHistoryStore;
  inventories: InventoryStore;
  hardwareSettings: HardwareSettingsStore;
  bootPathChanges: BootPathChangeStore;
}

export function createStores(db: Knex): Stores {
  return {
    nodes: new NodeStore(db),
    nodeLocks: new NodeLockStore(db),
    periodicNodes: new PeriodicNodeQueries(db),
    nodeCounts: new NodeCountStore(db),
    ports: new PortStore(db),
    conductors: new ConductorStore(db),
    nodeTraits: new NodeTraitStore(db),
    nodeHistory: new NodeHistoryStore(db),
    ...createResourceStores(db),
    inventories: new InventoryStore(db),
    hardwareSettings: new HardwareSettingsStore(db),
    bootPathChanges: new BootPathChangeStore(db),
  };
}
