import { type BmaasConfig, createSilentLogger, type LoadConfigOptions } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import { InventoryProcessor } from '../inspection/inventory-processor.js';
import { ProvisioningRunner } from '../provisioning/runner.js';
import type { DriverCatalog } from '../registry/catalog.js';
import { DriverRegistry } from '../registry/driver-registry.js';
import { DRIVER_CATALOG } from '../registry/enabled-interfaces.js';
import { loadConductorConfig } from '../registry/plugin-config.js';
import { TaskManager, type TaskManagerOptions } from '../task-manager.js';

/** Configuration for tests: no environment, fake boot only; overrides may name plug-in sections too ([agent], [pxe]). */
export function testConfig(overrides: NonNullable<LoadConfigOptions['overrides']> = {}): BmaasConfig {
  return loadConductorConfig({
    env: {},
    overrides: {
      ...overrides,
      DEFAULT: { host: 'conductor-test', enabled_boot_interfaces: ['fake'], ...overrides.DEFAULT },
      conductor: { node_locked_retry_attempts: 1, node_locked_retry_interval: 0.01, ...overrides.conductor },
    },
  });
}

/**
 * The conductor's registry (DRIVER_CATALOG under `config`) and a task
 * manager over the test stores as conductor `c1`, for tests of the runner
 * and the RPC handlers.
 */
export function fixtureTasks(
  stores: Stores,
  config: BmaasConfig,
  options: Partial<Pick<TaskManagerOptions, 'lockRetry' | 'history' | 'conductorId'>> & {
    /** The interfaces and hardware types to register (default: the product's DRIVER_CATALOG). */
    catalog?: DriverCatalog;
  } = {},
): { registry: DriverRegistry; tasks: TaskManager } {
  const { catalog = DRIVER_CATALOG, ...taskOptions } = options;
  const registry = DriverRegistry.create(catalog, {
    config,
    logger: createSilentLogger(),
    conductorHostname: 'c1',
  });
  const tasks = new TaskManager({
    nodes: stores.nodes,
    nodeLocks: stores.nodeLocks,
    ports: stores.ports,
    driverFor: (node) => registry.driverFor(node),
    hostname: 'c1',
    conductorId: () => 1,
    lockRetry: { attempts: 1, intervalMs: 10 },
    logger: createSilentLogger(),
    ...taskOptions,
  });
  return { registry, tasks };
}

/** The provisioning runner of a test conductor: its tasks, inspection's inventory processing, no automated cleaning. */
export function fixtureRunner(stores: Stores, tasks: TaskManager): ProvisioningRunner {
  const inventories = new InventoryProcessor({ ...stores, config: testConfig().inspector });
  return new ProvisioningRunner({ tasks, inventories, automatedClean: false, hardwareCache: stores.hardwareSettings });
}
