export { type Database, type DatabaseOptions, openDatabase } from './connection.js';
export { EmbeddedPostgresServer, loadEmbeddedPostgres, traversableByOthers } from './embedded-postgres.js';
export { downgradeSchema, migrationSource, schemaVersion, upgradeSchema } from './migrations/index.js';
export { type ResolvedDatabase, resolveDatabaseUrl } from './resolve.js';
export {
  type AliveConductor,
  type ConductorRegistration,
  ConductorStore,
} from './stores/conductor-store.js';
export { createStores, type Stores } from './stores/index.js';
export { InventoryStore, type NodeInventory } from './stores/inventory-store.js';
export {
  type NewNode,
  NODE_SORT_EXPRESSIONS,
  type NodeChanges,
  type NodeListQuery,
  NodeStore,
} from './stores/node-store.js';
export {
  BOOT_LOOKUP_SQL,
  type NewPort,
  PORT_SORT_EXPRESSIONS,
  type PortChanges,
  type PortListQuery,
  PortStore,
} from './stores/port-store.js';
