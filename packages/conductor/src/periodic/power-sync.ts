import { KeyedLimiter, NodeLocked, ProvisionState as S } from '@bmaas/common';
import type { PeriodicNodeFilter, PeriodicNodeRow } from '@bmaas/db';
import type { ConductorTask } from '../task-manager.js';
import { errorText, type NodeCheckDeps, ownedByMe } from './node-checks.js';
import type { NodeEventRecorder } from './node-events.js';

/** Ironic's fault for a node whose power state cannot be read. */
export const POWER_FAILURE = 'power failure';

/** Provision states whose power the sync leaves alone, as upstream (the machine is being driven, or not set up yet). */
const SYNC_EXCLUDED_STATES: readonly string[] = [S.DEPLOY_WAIT, S.CLEAN_WAIT, S.ENROLL, S.ADOPT_FAILED];

export interface PowerSyncDeps extends NodeCheckDeps {
  events: NodeEventRecorder;
}

/** Ticks of the sync per [conductor]sync_power_state_interval: how often it looks for nodes due a reading. */
export const SYNC_TICKS_PER_INTERVAL = 6;

/**
 * The power state sync (Ironic's _sync_power_states), built to keep every
 * node's reading at most [conductor]sync_power_state_interval old on a
 * conductor of thousands of nodes. One timer ticks SYNC_TICKS_PER_INTERVAL
 * times an interval (never a timer per node); each tick starts a reading of
 * every owned node last read half an interval ago or more (oldest first), so
 * that a reading whose request got no answer is tried again and still lands
 * within the interval. The owned nodes are listed in SQL once an interval,
 * and each is read only while the hash ring still maps it here (two
 * conductors reading one BMC would double its requests).
 * Readings run at most [conductor]sync_power_state_workers at a time over
 * the conductor (the budget), each BMC's requests one at a time by its
 * interface's client; a tick does not wait for them, and a node still being
 * read is not started again. Nodes that are locked, changing power, in
 * maintenance or in an excluded state are skipped. After
 * [conductor]power_state_sync_max_retries consecutive failed reads a node
 * goes to maintenance with fault "power failure"; recoverPowerFailures()
 * takes it out when its BMC answers again.
 */
export class PowerStateSync {
  /** Consecutive failed reads per node uuid (in memory, as upstream). */
  private readonly failures = new Map<string, number>();
  /** When each owned node was last read or skipped (ms since the epoch). */
  private readonly lastRead = new Map<string, number>();
  /** Nodes whose reading started and has not ended, and those readings. */
  private readonly reading = new Set<string>();
  private readonly readings = new Set<Promise<void>>();
  private readonly budget: KeyedLimiter;
  private listed: { at: number; nodes: PeriodicNodeRow[] } | undefined;
  private closed = false;

  constructor(private readonly deps: PowerSyncDeps) {
    this.budget = new KeyedLimiter(Math.max(1, Math.floor(deps.config.sync_power_state_workers)));
  }

  /** One tick: starts the readings that are due, without waiting for them. */
  async syncPowerStates(): Promise<void> {
    if (this.closed) return;
    const intervalMs = this.deps.config.sync_power_state_interval * 1000;
    const now = this.deps.now().getTime();
    if (!this.listed || now - this.listed.at >= intervalMs) {
      const nodes = await this.ownedNodes({
        maintenance: false,
        unreserved: true,
        noTargetPowerState: true,
        provisionStateNotIn: SYNC_EXCLUDED_STATES,
      });
      this.listed = { at: now, nodes };
      const listed = new Set(nodes.map((n) => n.uuid));
      for (const uuid of this.lastRead.keys()) if (!listed.has(uuid)) this.lastRead.delete(uuid);
    }
    const dueBefore = now - intervalMs / 2;
    const due = this.listed.nodes
      .filter((node) => !this.reading.has(node.uuid) && (this.lastRead.get(node.uuid) ?? 0) <= dueBefore)
      .sort((a, b) => (this.lastRead.get(a.uuid) ?? 0) - (this.lastRead.get(b.uuid) ?? 0));
    for (const node of due) {
      this.reading.add(node.uuid);
      const reading = this.budget
        .run('sync', async () => {
          // Listed up to an interval ago: the ring may have moved the node to another conductor since.
          if (!this.closed && (await ownedByMe(this.deps, node))) await this.syncOne(node);
        })
        .catch((error: unknown) => {
          this.deps.logger.warn('power state sync failed', { nodeUuid: node.uuid, error: errorText(error) });
        })
        .finally(() => {
          this.reading.delete(node.uuid);
          this.readings.delete(reading);
          this.lastRead.set(node.uuid, this.deps.now().getTime());
        });
      this.readings.add(reading);
    }
  }

  /**
   * No reading starts from now on (the conductor stops); waits up to `waitMs` for the ones
   * under way (reads only: one cut short changes nothing).
   */
  async close(waitMs: number): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.readings]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async recoverPowerFailures(): Promise<void> {
    const nodes = await this.ownedNodes({ maintenance: true, fault: POWER_FAILURE, unreserved: true });
    await inParallel(nodes, this.deps.config.sync_power_state_workers, (node) => this.recoverOne(node));
  }

  private async ownedNodes(filter: PeriodicNodeFilter): Promise<PeriodicNodeRow[]> {
    const { stores, self } = this.deps;
    const nodes = await stores.periodicNodes.listForPeriodicTask(self.conductorGroup, self.hardwareTypes, filter);
    const owned: PeriodicNodeRow[] = [];
    for (const node of nodes) if (await ownedByMe(this.deps, node)) owned.push(node);
    return owned;
  }

  private async syncOne(node: PeriodicNodeRow): Promise<void> {
    await this.withNode(node, 'power state sync', async (task) => {
      // Listed up to an interval ago: what the listing filtered out may have happened since.
      const { maintenance, targetPowerState, provisionState } = task.node;
      if (maintenance || targetPowerState !== null || SYNC_EXCLUDED_STATES.includes(provisionState)) return;
      let actual: string | null;
      try {
        actual = await task.driver.power.getPowerState(task);
      } catch (error) {
        await this.readFailed(task, errorText(error));
        return;
      }
      this.failures.delete(node.uuid);
      await this.recordHealth(task);
      // null: the interface cannot tell (a fake node nothing powered yet); nothing to record.
      if (actual === null || actual === task.node.powerState) return;
      await task.upgradeLock();
      // Re-read under the lock: a power change may have started meanwhile.
      if (task.node.targetPowerState !== null || task.node.maintenance) return;
      const from = task.node.powerState;
      await task.updateNode({ powerState: actual });
      // A node whose power state was never known just gets it; anything else changed behind our back.
      if (from === null) task.logger.info('power state sync: power state recorded', { powerState: actual });
      else await this.deps.events.powerStateChangedOutside(task.node, from, actual);
    });
  }

  /**
   * 1.109's node health: what the management interface's getHealth reads
   * from the BMC, recorded when it changed (a reading, not an edit: no lock
   * needed, updated_at untouched). An interface without getHealth leaves it
   * null; a failed read leaves it as it was.
   */
  private async recordHealth(task: ConductorTask): Promise<void> {
    const management = task.driver.management;
    if (!management.getHealth) return;
    let health: Awaited<ReturnType<NonNullable<typeof management.getHealth>>>;
    try {
      health = await management.getHealth(task);
    } catch (error) {
      task.logger.warn('power state sync: could not read the health', { error: errorText(error) });
      return;
    }
    if (health === task.node.health) return;
    if (await this.deps.stores.nodes.recordHealth(task.node.id, health)) {
      task.logger.info('power state sync: health changed', { from: task.node.health, health });
    }
  }

  private async readFailed(task: ConductorTask, error: string): Promise<void> {
    const { uuid } = task.node;
    const count = (this.failures.get(uuid) ?? 0) + 1;
    this.failures.set(uuid, count);
    const limit = this.deps.config.power_state_sync_max_retries;
    task.logger.warn('power state sync: could not read the power state', { error, failures: count, limit });
    if (count < limit) return;
    await task.upgradeLock();
    if (task.node.maintenance) return;
    const reason = `During power state sync, ${count} consecutive reads of the power state of node ${uuid} failed; power state "${task.node.powerState}" is unknown now, node switched to maintenance. Error: ${error}`;
    await task.updateNode({ maintenance: true, maintenanceReason: reason, fault: POWER_FAILURE, powerState: null });
    this.failures.delete(uuid);
    await this.deps.events.powerFailure(task.node, error);
  }

  private async recoverOne(node: PeriodicNodeRow): Promise<void> {
    await this.withNode(node, 'power failure recovery', async (task) => {
      let actual: string | null;
      try {
        actual = await task.driver.power.getPowerState(task);
      } catch (error) {
        task.logger.debug('power failure recovery: BMC still unreadable', { error: errorText(error) });
        return;
      }
      await task.upgradeLock();
      if (!task.node.maintenance || task.node.fault !== POWER_FAILURE) return;
      await task.updateNode({ maintenance: false, maintenanceReason: null, fault: null, powerState: actual });
      await this.deps.events.powerRecovered(task.node, actual);
    });
  }

  /** A shared lock on the node; a node locked meanwhile is left for the next run. */
  private async withNode(node: PeriodicNodeRow, purpose: string, fn: (task: ConductorTask) => Promise<void>) {
    try {
      await this.deps.tasks.withTask(node.uuid, { shared: true, purpose }, fn);
    } catch (error) {
      if (!(error instanceof NodeLocked)) {
        this.deps.logger.warn(`${purpose} failed`, { nodeUuid: node.uuid, error: errorText(error) });
      }
    }
  }
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, Math.floor(limit)), items.length) }, worker));
}
