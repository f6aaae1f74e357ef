export {
  type BootPathCacheConfig,
  BootPathChangeFeed,
  type BootPathChangeFeedOptions,
  type BootPathListener,
  followBootPath,
} from './boot-path-change-feed.js';
export {
  type Database,
  type DatabaseOptions,
  isDatabaseUnavailable,
  openDatabase,
  serviceDatabaseOptions,
} from './connection.js';
export { EmbeddedPostgresServer, loadEmbeddedPostgres, traversableByOthers } from './embedded-postgres.js';
export { downgradeSchema, migrationSource, schemaVersion, upgradeSchema } from './migrations/index.js';
export { type ResolvedDatabase, resolveDatabaseUrl } from './resolve.js';
export { AllocationStore, type CandidateQuery } from './stores/allocation-store.js';
export {
  BootPathChangeStore,
  type BootPathChanges,
  type BootPathChangesSince,
  type BootPathPosition,
} from './stores/boot-path-change-store.js';
export {
  type AliveConductor,
  type ConductorRegistration,
  ConductorStore,
} from './stores/conductor-store.js';
export { HardwareSettingsStore, type Timed } from './stores/hardware-settings-store.js';
export { createStores, type Stores } from './stores/index.js';
export { InventoryStore, type NodeInventory } from './stores/inventory-store.js';
export { NodeCountStore } from './stores/node-count-store.js';
export { type NewNodeHistory, type NodeHistoryPage, NodeHistoryStore } from './stores/node-history-store.js';
export { NodeLockStore, type VersionedNode } from './stores/node-lock-store.js';
export type { NodeChanges, NodeWithPorts } from './stores/node-rows.js';
export { type NewNode, NODE_SORT_EXPRESSIONS, type NodeListQuery, NodeStore } from './stores/node-store.js';
export { NodeTraitStore } from './stores/node-trait-store.js';
export {
  type PeriodicNodeFilter,
  PeriodicNodeQueries,
  type PeriodicNodeRow,
} from './stores/periodic-node-queries.js';
export {
  BOOT_LOOKUP_SQL,
  type NewPort,
  PORT_SORT_EXPRESSIONS,
  type PortChanges,
  type PortListQuery,
  PortStore,
} from './stores/port-store.js';
export { type ColumnFilters, ResourceStore, type ResourceTableSpec } from './stores/resource-store.js';
export {
  ChassisStore,
  InspectionRuleStore,
  PortgroupStore,
  type ResourceStores,
  RunbookStore,
} from './stores/resource-stores.js';
export { TraitStore } from './stores/trait-store.js';
