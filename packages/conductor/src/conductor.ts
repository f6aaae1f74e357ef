import type { AddressInfo } from 'node:net';
import { type BmaasConfig, type Logger, RepeatingTask, WAIT_STATES } from '@bmaas/common';
import { followBootPath, type Stores } from '@bmaas/db';
import type { MaskSecrets } from '@bmaas/inspection-rules';
import { ConductorRing, RpcCallMetrics } from '@bmaas/rpc-client';
import { loadSendfile } from '@bmaas/sendfile';
import { AllocationProcessor } from './allocations/allocation-processor.js';
import { type ConductorSetup, prepareConductor } from './conductor-setup.js';
import { NodeHistoryWriter } from './history/node-history-writer.js';
import { createHttpFileServer, listen } from './http-file-server.js';
import { InventoryProcessor } from './inspection/inventory-processor.js';
import { InspectionRuleApplier, readBuiltInRules } from './inspection/rule-application.js';
import type { ConductorMetrics } from './metrics/conductor-metrics.js';
import type { NodeCheckDeps } from './periodic/node-checks.js';
import { type NodeEventRecorder, recordedNodeEvents } from './periodic/node-events.js';
import { crashRecoveryChanges, releaseOwnLeftovers } from './periodic/orphans.js';
import type { PeriodicTaskDeps } from './periodic/periodic-task.js';
import { PERIODIC_TASKS } from './periodic/periodic-tasks.js';
import { PowerStateSync } from './periodic/power-sync.js';
import { TakeoverCheck } from './periodic/takeover.js';
import { ProvisioningRunner } from './provisioning/runner.js';
import { RegistrationLease } from './registration-lease.js';
import { textFileMatcher } from './registry/boot-descriptors.js';
import type { DriverCatalog } from './registry/catalog.js';
import { createRpcHandlers } from './rpc/handlers.js';
import { ConductorRpcServer } from './rpc/json-rpc-server.js';
import { SharedNodeCache } from './shared-node-cache.js';
import { TaskManager } from './task-manager.js';

export interface ConductorDeps {
  config: BmaasConfig;
  stores: Stores;
  /** The process's root logger; the conductor takes children per component. */
  logger: Logger;
  /** Interfaces and hardware types that may be enabled; default the product's list. */
  catalog?: DriverCatalog;
  /** The result of prepareConductor, when the caller checked the configuration first. */
  setup?: ConductorSetup;
  /** The recorder of this conductor process; its registry is served at the JSON-RPC listener's /metrics. */
  metrics: ConductorMetrics;
  /** Where power changes seen outside the service are recorded; default: log lines. */
  events?: NodeEventRecorder;
  now?: () => Date;
}

export interface Conductor {
  /** Registered hostname (host, or host:port on a non-default JSON-RPC port). */
  readonly hostname: string;
  /** Database id, once started. */
  readonly id: number | undefined;
  readonly rpcAddress: AddressInfo | undefined;
  readonly fileServerAddress: AddressInfo | undefined;
  readonly tasks: TaskManager;
  readonly runner: ProvisioningRunner;
  /** Clears its old locks, recovers, listens, registers, then heartbeats and runs the periodic checks. */
  start(): Promise<void>;
  /** Offline at once, refuses new calls, finishes (bounded) or fails what it holds, releases every lock. */
  stop(): Promise<void>;
  /** Runs every periodic check once, now (tests). */
  runPeriodicChecks(): Promise<void>;
}

/**
 * Builds a conductor from its dependencies. The configuration is checked
 * here (prepareConductor) unless the caller did so first: a ConfigError
 * stops it before it starts.
 */
export function createConductor(deps: ConductorDeps): Conductor {
  const { stores } = deps;
  const { metrics } = deps;
  const setup =
    deps.setup ??
    prepareConductor({
      config: deps.config,
      logger: deps.logger,
      catalog: deps.catalog,
      agentCommands: metrics,
      powerActions: metrics,
    });
  const { config, identity, registry, auth, tls, fileServerAt } = setup;
  const now = deps.now ?? (() => new Date());
  const { hostname } = identity;
  const logger = deps.logger.child({ component: 'conductor' });

  let conductorId: number | undefined;
  const history = new NodeHistoryWriter({
    store: stores.nodeHistory,
    conductor: hostname,
    logger: deps.logger.child({ component: 'node-history' }),
    recording: config.conductor.node_history,
  });
  // The boot path's nodes in memory, following the change log (started and stopped with the conductor).
  const bootPath = followBootPath(
    stores.bootPathChanges,
    config.database,
    deps.logger.child({ component: 'boot-path-cache' }),
    (following) =>
      new SharedNodeCache(config.conductor.boot_path_cache_nodes, following, async (nodeIds) => {
        const id = conductorId;
        return id === undefined ? [] : stores.nodes.listPreparedByWithPorts(nodeIds, id, [...WAIT_STATES]);
      }),
  );
  // Fencing: past heartbeat_timeout without a renewal, this conductor acts on no node.
  const lease = new RegistrationLease({
    hostname,
    timeoutMs: config.conductor.heartbeat_timeout * 1000,
    logger: deps.logger.child({ component: 'registration' }),
  });
  const tasks = new TaskManager({
    lease,
    nodes: stores.nodes,
    nodeLocks: stores.nodeLocks,
    nodeCache: bootPath?.listener,
    ports: stores.ports,
    driverFor: (node) => registry.driverFor(node),
    hostname,
    conductorId: () => conductorId,
    lockRetry: {
      attempts: config.conductor.node_locked_retry_attempts,
      intervalMs: config.conductor.node_locked_retry_interval * 1000,
    },
    logger: deps.logger.child({ component: 'task' }),
    history,
    provisionStates: metrics,
  });
  const inventories = new InventoryProcessor({
    ports: stores.ports,
    inventories: stores.inventories,
    config: config.inspector,
    rules: new InspectionRuleApplier({
      rules: stores.inspectionRules,
      traits: stores.nodeTraits,
      ports: stores.ports,
      builtIn: readBuiltInRules(config.inspection_rules.built_in_rules),
      maskSecrets: config.inspection_rules.mask_secrets as MaskSecrets,
    }),
  });
  const runner = new ProvisioningRunner({
    tasks,
    inventories,
    automatedClean: config.conductor.automated_clean,
    requireTls: config.agent.require_tls,
    hardwareCache: stores.hardwareSettings,
    now,
  });
  const ring = new ConductorRing({
    conductors: stores.conductors,
    heartbeatTimeout: config.conductor.heartbeat_timeout,
    resetInterval: config.DEFAULT.hash_ring_reset_interval,
    logger: deps.logger.child({ component: 'hash-ring' }),
  });
  const checks: NodeCheckDeps = {
    stores,
    ring,
    tasks,
    runner,
    self: {
      hostname,
      conductorGroup: identity.conductorGroup,
      hardwareTypes: registry.hardwareTypeNames(),
      id: () => conductorId,
    },
    config: config.conductor,
    logger: deps.logger.child({ component: 'periodic' }),
    now,
  };
  const allocations = new AllocationProcessor({
    stores,
    conductorId: () => conductorId,
    lockRetry: {
      attempts: config.conductor.node_locked_retry_attempts,
      intervalSeconds: config.conductor.node_locked_retry_interval,
    },
    heartbeatTimeoutSeconds: config.conductor.heartbeat_timeout,
    logger: deps.logger,
  });
  const rpcServer = new ConductorRpcServer({
    handlers: createRpcHandlers({ runner, tasks, history, registry, allocations }),
    logger: deps.logger.child({ component: 'json-rpc' }),
    tls,
    auth,
    metrics: new RpcCallMetrics(metrics.registry, 'server'),
    registry: metrics.registry,
  });
  const zeroCopy = fileServerAt && config.deploy.http_server_sendfile ? loadSendfile() : undefined;
  const fileServer = fileServerAt
    ? createHttpFileServer({
        root: config.deploy.http_root,
        logger: deps.logger.child({ component: 'http-root' }),
        isTextFile: textFileMatcher(registry.bootDescriptors),
        sendfile: zeroCopy?.sendfile,
        sendBufferBytes: config.deploy.http_server_send_buffer,
      })
    : undefined;

  const registration = () => ({
    hostname,
    conductorGroup: identity.conductorGroup,
    drivers: registry.hardwareTypeNames(),
    interfaces: registry.registrationInterfaces(),
  });
  const periodicDeps: PeriodicTaskDeps = {
    ...checks,
    metrics,
    async heartbeat() {
      await lease.renew(
        async () => {
          // False when our row is gone (someone deleted it): register again.
          if (!(await stores.conductors.touch(hostname)))
            conductorId = (await stores.conductors.register(registration())).id;
        },
        async () => {
          // Back after a lapse: locks still under our name are void work's (nothing new was
          // taken while fenced); nodes it left mid-way fail as after a crash, then the ring is read again.
          const released = await releaseOwnLeftovers(checks);
          if (released > 0) logger.warn('released the locks of work voided by the lapse', { count: released });
          ring.invalidate();
        },
      );
    },
    takeover: new TakeoverCheck(checks),
    allocations,
    powerSync: new PowerStateSync({
      ...checks,
      events: deps.events ?? recordedNodeEvents(deps.logger.child({ component: 'node-events' }), history),
    }),
  };
  const timers = PERIODIC_TASKS.flatMap((task) => {
    const seconds = task.intervalSeconds(config);
    if (seconds <= 0) return [];
    const timer = new RepeatingTask(task.name, seconds * 1000, () => task.run(periodicDeps), logger);
    return [{ task, timer }];
  });

  let rpcAddress: AddressInfo | undefined;
  let fileAddress: AddressInfo | undefined;
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  async function start(): Promise<void> {
    const leftovers = await releaseOwnLeftovers(checks);
    if (leftovers > 0) logger.warn('released locks left by a previous run', { count: leftovers });
    for (const boot of registry.enabledBootInterfaces()) await boot.prepareHttpRoot();
    rpcAddress = await rpcServer.listen(config.json_rpc.host_ip, config.json_rpc.port);
    if (fileServer && fileServerAt) {
      fileAddress = await listen(fileServer, fileServerAt.host, fileServerAt.port);
      // Said once: an operator comparing its speed with nginx's wants to know which way it sends.
      if (zeroCopy?.reason)
        logger.warn('the file server copies every chunk through user space', { reason: zeroCopy.reason });
      else if (zeroCopy) logger.info('the file server sends bodies with sendfile(2)');
    }
    await lease.renew(async () => {
      conductorId = (await stores.conductors.register(registration())).id;
    });
    await allocations.resume();
    ring.invalidate();
    bootPath?.feed.start();
    for (const { task, timer } of timers) timer.start({ runNow: task.runAtStart });
    logger.info('conductor started', {
      hostname,
      conductorId,
      conductorGroup: identity.conductorGroup,
      hardwareTypes: registry.hardwareTypeNames(),
      rpc: `${rpcAddress.address}:${rpcAddress.port}`,
      ...(fileAddress ? { httpRoot: `${fileAddress.address}:${fileAddress.port}` } : {}),
    });
  }

  async function stop(): Promise<void> {
    await starting?.catch(() => {});
    rpcServer.stopAccepting();
    try {
      await stores.conductors.markOffline(hostname);
    } catch (error) {
      logger.error('could not mark this conductor offline', { error: (error as Error).message });
    }
    logger.info('conductor going offline', { running: tasks.heldCount });
    await Promise.all(timers.map(({ timer }) => timer.stop()));
    // Readings under way hold no lock; a few seconds for them to end, then the client closes.
    await periodicDeps.powerSync.close(Math.min(5000, (config.conductor.heartbeat_timeout * 1000) / 4));
    lease.close();
    await bootPath?.feed.stop();
    // Finish within half the heartbeat timeout: past a full one, others treat our locks as a dead conductor's.
    await allocations.drain();
    const drained = await tasks.drain((config.conductor.heartbeat_timeout * 1000) / 2);
    if (!drained) {
      const abandoned = await tasks.abandonAll((node) => crashRecoveryChanges(node, `Conductor ${hostname}`, now()));
      logger.warn('stopped before its work finished; nodes failed', { abandoned });
    }
    await stores.nodeLocks.clearReservations(hostname);
    await registry.close(logger);
    await rpcServer.close();
    await history.close();
    if (fileServer?.listening) {
      const closed = new Promise<void>((resolve) => fileServer.close(() => resolve()));
      fileServer.closeAllConnections();
      await closed;
    }
    logger.info('conductor stopped');
  }

  return {
    hostname,
    get id() {
      return conductorId;
    },
    get rpcAddress() {
      return rpcAddress;
    },
    get fileServerAddress() {
      return fileAddress;
    },
    tasks,
    runner,
    start() {
      starting ??= start();
      return starting;
    },
    stop() {
      stopping ??= stop();
      return stopping;
    },
    async runPeriodicChecks() {
      ring.invalidate();
      for (const { task, timer } of timers) if (task.onDemand) await timer.runOnce();
    },
  };
}
