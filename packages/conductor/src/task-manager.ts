import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger, NodeLocked, NodeNotFound, type NodeRecord, type PortRecord } from '@bmaas/common';
import type { NodeChanges, NodeLockStore, NodeStore, PortStore } from '@bmaas/db';
import type { BootInterface, NodeDriver, RamdiskMode, Task } from '@bmaas/driver-api';
import { historyOfChange } from './history/history-events.js';
import type { NodeHistoryWriter } from './history/node-history-writer.js';
import type { RegistrationLease } from './registration-lease.js';
import type { SharedNodeCache } from './shared-node-cache.js';

export interface TaskManagerOptions {
  nodes: NodeStore;
  nodeLocks: NodeLockStore;
  ports: Pick<PortStore, 'listByNode'>;
  /** The node's interfaces; throws when they are not enabled here. */
  driverFor(node: NodeRecord): NodeDriver;
  /** Registered hostname: the value written to nodes.reservation. */
  hostname: string;
  /** Database id of this conductor once registered, recorded as conductor_affinity when boot files are prepared. */
  conductorId(): number | undefined;
  /** [conductor]node_locked_retry_attempts and _interval (ms). */
  lockRetry: { attempts: number; intervalMs: number };
  logger: Logger;
  /** Where provision state changes and errors written under a lock are recorded (node history). */
  history?: Pick<NodeHistoryWriter, 'record'>;
  /** Told of every provision state change written under a lock (deploy and clean durations). */
  provisionStates?: ProvisionStateObserver;
  /** The boot path's nodes in memory ([database]boot_path_cache), for shared locks that may use them. */
  nodeCache?: Pick<SharedNodeCache, 'read' | 'held'> | undefined;
  /**
   * The conductor's registration lease (fencing): no exclusive lock is taken, no write made
   * and no driver call run under an exclusive lock while it has lapsed, nor by work begun in
   * an earlier epoch (ConductorFenced). Absent: nothing is fenced.
   */
  lease?: Pick<RegistrationLease, 'guard' | 'epoch'> | undefined;
}

export interface ProvisionStateObserver {
  provisionStateChanged(nodeUuid: string, from: string, to: string): void;
}

export interface AcquireOptions {
  /** Shared: read only, no reservation. Default exclusive. */
  shared?: boolean;
  /** What the lock is for, for the logs. */
  purpose: string;
  /** Shared only: the node may come from the boot path's cache, at most one change-log poll old. */
  cached?: boolean;
  /**
   * Exclusive only: the lock is taken by the task's first write, in the same
   * statement, where the node is still unlocked and unchanged since it was
   * read; one statement fewer per action. When it was locked or changed
   * meanwhile, `fn` runs again, on a lock taken first as usual. So `fn` must
   * change nothing outside the node before its first write (checks, choices).
   */
  lockWithFirstWrite?: boolean;
  requestId?: string | undefined;
}

/** Work that goes on after the RPC answer, under the same lock (Ironic's spawn_after). */
export type BackgroundWork = (task: ConductorTask) => Promise<void>;

/**
 * A Task as the conductor holds it: the driver-api contract plus what only
 * the conductor may do (wider updates, lock upgrade, background work).
 */
export interface ConductorTask extends Task {
  /** Any node column (exclusive lock only); compare-and-set on our reservation. */
  updateNode(changes: NodeChanges): Promise<NodeRecord>;
  /** Any node column, written with the next updateNode or the release (see Task.writeWithNext). */
  writeWithNext(changes: NodeChanges): void;
  /** Shared -> exclusive, with the same retries as acquire; NodeLocked when it cannot. */
  upgradeLock(): Promise<void>;
  /** Keeps the lock when the caller's function returns and runs `work`, then releases. */
  spawnAfter(work: BackgroundWork): void;
}

/** One change asked of a node under its lock, and the node it was asked of (for history and state events). */
export interface NodeChange {
  before: NodeRecord;
  changes: NodeChanges;
}

/** What one statement under the lock writes: the changes merged, and each change it carries, in order. */
export interface NodeWrite {
  changes: NodeChanges;
  carries: readonly NodeChange[];
}

/** A lock taken by the first write found the node locked or changed since it was read (lockWithFirstWrite). */
class LockRaced extends Error {
  constructor(nodeUuid: string) {
    super(`node ${nodeUuid} was locked or changed before its lock was taken`);
  }
}

class NodeTask implements ConductorTask {
  background: BackgroundWork | undefined;
  released = false;
  /** Changes written with the next write under the lock, or with the release (writeWithNext). */
  pending: NodeWrite | undefined;
  /** The row version read, while the lock is still to be taken by the first write (lockWithFirstWrite). */
  lockVersion: string | undefined;
  /** The first write found the node locked or changed since it was read: the task's work is void. */
  raced = false;
  private taskLogger: Logger | undefined;
  /** The lease epoch the task was begun in: it may act only while that epoch lasts. */
  readonly epoch: number;

  constructor(
    private readonly manager: TaskManager,
    private current: NodeRecord,
    readonly ports: readonly PortRecord[],
    readonly driver: NodeDriver,
    private exclusive: boolean,
    private readonly makeLogger: () => Logger,
    readonly requestId: string | undefined,
  ) {
    this.epoch = manager.options.lease?.epoch ?? 0;
  }

  /** Begun before the lease's last lapse, or during one: it may not act (and writes nothing on release). */
  get void(): boolean {
    const lease = this.manager.options.lease;
    if (!lease) return false;
    try {
      lease.guard(this.epoch);
      return false;
    } catch {
      return true;
    }
  }

  /** Made on first use: most boot-path tasks never log, and a child logger per task showed in its profile. */
  get logger(): Logger {
    this.taskLogger ??= this.makeLogger();
    return this.taskLogger;
  }

  get node(): NodeRecord {
    return this.current;
  }

  get shared(): boolean {
    return !this.exclusive;
  }

  async updateNode(changes: NodeChanges): Promise<NodeRecord> {
    if (!this.exclusive || this.released) {
      throw new Error(`node ${this.current.uuid}: updateNode needs the exclusive lock`);
    }
    this.current = await this.manager.writeUnderLock(this, this.takePending(changes));
    return this.current;
  }

  /**
   * `changes` apply to `node` now and go to the database with the next
   * updateNode, or with the release when none comes: one statement fewer
   * (conductor_affinity after boot files are prepared, a fake interface's
   * record, the wait state that ends the work under the lock). History and
   * state events follow the write that carries them.
   */
  writeWithNext(changes: NodeChanges): void {
    if (!this.exclusive || this.released) {
      throw new Error(`node ${this.current.uuid}: writeWithNext needs the exclusive lock`);
    }
    this.pending = this.takePending(changes);
    this.current = Object.assign({}, this.current, changes);
  }

  /** What is pending and `changes` (after it) as one write; nothing is pending afterwards. */
  takePending(changes: NodeChanges): NodeWrite {
    const pending = this.pending;
    this.pending = undefined;
    const change = { before: this.current, changes };
    if (!pending) return { changes, carries: [change] };
    return { changes: Object.assign({}, pending.changes, changes), carries: [...pending.carries, change] };
  }

  async upgradeLock(): Promise<void> {
    if (this.exclusive) return;
    await this.manager.reserveWithRetries(this.current);
    this.exclusive = true;
    this.manager.track(this);
    const fresh = await this.manager.options.nodes.getById(this.current.id);
    if (fresh) this.current = fresh;
  }

  spawnAfter(work: BackgroundWork): void {
    if (!this.exclusive) throw new Error(`node ${this.current.uuid}: background work needs the exclusive lock`);
    this.background = work;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.exclusive) await this.manager.releaseLock(this);
  }
}

/**
 * Node locks, as Ironic's task manager: exclusive = a reservation written
 * with one conditional UPDATE (retried, then NodeLocked); shared = a plain
 * read. Every lock is released when the work ends, thrown or not; background
 * work keeps it until it finishes.
 */
export class TaskManager {
  private readonly held = new Map<number, NodeTask>();
  private readonly running = new Set<Promise<void>>();
  private readonly wrapped = new WeakMap<NodeDriver, NodeDriver>();
  /** The driver of a node from the boot path's cache: the same frozen object request after request. */
  private readonly driverOfFrozen = new WeakMap<NodeRecord, NodeDriver>();

  constructor(readonly options: TaskManagerOptions) {}

  /** Locks held right now (foreground and background). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Takes a lock and builds the task; the caller must release it (prefer withTask). */
  async acquire(nodeUuid: string, options: AcquireOptions): Promise<ConductorTask & { release(): Promise<void> }> {
    const { nodes, nodeLocks } = this.options;
    const exclusive = !options.shared;
    let node: NodeRecord | undefined;
    let ports: PortRecord[] | undefined;
    if (exclusive) {
      this.options.lease?.guard(this.options.lease.epoch);
      // Reservation, node and ports in one statement. When it finds the node taken (or none), the former
      // path, with all its attempts: a lock released meanwhile is taken at once, as before.
      const reserved = await nodeLocks.reserveByUuidWithPorts(nodeUuid, this.options.hostname);
      if (reserved) {
        ({ node, ports } = reserved);
      } else {
        node = await nodes.getByUuid(nodeUuid);
        if (!node) throw new NodeNotFound(nodeUuid);
        await this.reserveWithRetries(node);
        node = (await nodes.getById(node.id)) ?? node;
      }
    } else {
      // A shared lock is the boot path's: node and ports in one round trip (batched by the store under load).
      const { nodeCache } = this.options;
      const read =
        options.cached && nodeCache
          ? await nodeCache.read(nodeUuid, () => nodes.getByUuidWithPorts(nodeUuid))
          : await nodes.getByUuidWithPorts(nodeUuid);
      if (!read) throw new NodeNotFound(nodeUuid);
      ({ node, ports } = read);
    }
    const makeLogger = this.taskLogger(nodeUuid, options);
    let task: NodeTask;
    try {
      const driver = this.driverOf(node);
      ports ??= await this.options.ports.listByNode(node.id);
      task = new NodeTask(this, node, ports, driver, exclusive, makeLogger, options.requestId);
    } catch (error) {
      if (exclusive) await nodeLocks.release(node.id, this.options.hostname);
      throw error;
    }
    if (exclusive) this.track(task);
    return task;
  }

  /**
   * Runs `fn` under a lock and releases it afterwards, also when `fn` throws.
   * When `fn` called task.spawnAfter(work), the lock passes to `work`, which
   * runs after `fn`'s result is returned and releases the lock when done.
   */
  async withTask<T>(nodeUuid: string, options: AcquireOptions, fn: (task: ConductorTask) => Promise<T>): Promise<T> {
    if (options.lockWithFirstWrite && !options.shared) {
      const task = await this.taskLockedByFirstWrite(nodeUuid, options);
      if (task) {
        const outcome = await this.runTask(task, fn).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
        if (!task.raced) {
          if ('error' in outcome) throw outcome.error;
          return outcome.value;
        }
        // Locked or changed between the read and the first write: again, on a lock taken first.
      }
    }
    const task = this.taskOfHeldNode(nodeUuid, options) ?? ((await this.acquire(nodeUuid, options)) as NodeTask);
    return this.runTask(task, fn);
  }

  /** withTask's work on a task built: `fn`, then its background work or the release. */
  private async runTask<T>(task: NodeTask, fn: (task: ConductorTask) => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await fn(task);
      if (task.raced) throw new LockRaced(task.node.uuid);
      // Background work holds the lock: a task that has not written yet takes it now.
      if (task.background && task.lockVersion !== undefined) await task.updateNode({});
    } catch (error) {
      await this.releaseQuietly(task);
      throw error;
    }
    const work = task.background;
    if (work) this.runInBackground(task, work);
    else if (task.pending)
      await task.release(); // it writes what fn asked for: its failure is fn's
    else if (task.shared)
      task.released = true; // a shared lock holds nothing to give back
    else await this.releaseQuietly(task);
    return result;
  }

  /**
   * An exclusive task on the node as read with its row version, its lock to
   * be taken by its first write (lockWithFirstWrite); undefined when the node
   * is locked now, for the usual way and its retries.
   */
  private async taskLockedByFirstWrite(nodeUuid: string, options: AcquireOptions): Promise<NodeTask | undefined> {
    this.options.lease?.guard(this.options.lease.epoch);
    const read = await this.options.nodeLocks.getVersionedByUuidWithPorts(nodeUuid);
    if (!read) throw new NodeNotFound(nodeUuid);
    if (read.node.reservation !== null) return undefined;
    const makeLogger = this.taskLogger(nodeUuid, options);
    const task = new NodeTask(
      this,
      read.node,
      read.ports,
      this.driverOf(read.node),
      true,
      makeLogger,
      options.requestId,
    );
    task.lockVersion = read.version;
    return task;
  }

  /**
   * A shared task on the boot path's cached node, built without waiting:
   * acquire() would answer with the same node, after a few promises that a
   * boot storm pays per request. Undefined when the cache cannot answer now.
   */
  private taskOfHeldNode(nodeUuid: string, options: AcquireOptions): NodeTask | undefined {
    if (!options.shared || !options.cached) return undefined;
    const held = this.options.nodeCache?.held(nodeUuid);
    if (!held) return undefined;
    const makeLogger = this.taskLogger(nodeUuid, options);
    return new NodeTask(this, held.node, held.ports, this.driverOf(held.node), false, makeLogger, options.requestId);
  }

  /** Makes a task's logger, on its first use. */
  private taskLogger(nodeUuid: string, options: AcquireOptions): () => Logger {
    return () => this.options.logger.child({ nodeUuid, requestId: options.requestId, purpose: options.purpose });
  }

  /**
   * Waits up to timeoutMs for background work to finish. True when nothing
   * is left running.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.running.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const timer = sleep(left, undefined, { ref: false });
      await Promise.race([Promise.allSettled([...this.running]), timer]);
    }
    return true;
  }

  /**
   * Gives up every lock still held (on stop, after drain timed out): each node
   * moves to `changesFor(node)` and its reservation is cleared in one
   * compare-and-set, so late writes of the abandoned work fail.
   */
  async abandonAll(changesFor: (node: NodeRecord) => NodeChanges): Promise<number> {
    const tasks = [...this.held.values()];
    for (const task of tasks) {
      task.released = true;
      this.held.delete(task.node.id);
      const changes = Object.assign({}, task.pending?.changes, changesFor(task.node), { reservation: null });
      await this.options.nodes.update(task.node.id, changes, { reservation: this.options.hostname });
      task.logger.warn('lock abandoned on stop', {
        provisionState: changes.provisionState ?? task.node.provisionState,
      });
    }
    return tasks.length;
  }

  /** @internal */
  track(task: NodeTask): void {
    this.held.set(task.node.id, task);
  }

  /** @internal One conditional UPDATE per attempt; NodeLocked naming the holder after the last. */
  async reserveWithRetries(node: NodeRecord): Promise<void> {
    const { nodes, nodeLocks, hostname, lockRetry } = this.options;
    const attempts = Math.max(1, lockRetry.attempts);
    this.options.lease?.guard(this.options.lease.epoch);
    for (let attempt = 1; ; attempt++) {
      if (await nodeLocks.reserve(node.id, hostname)) return;
      if (attempt >= attempts) break;
      await sleep(lockRetry.intervalMs);
    }
    const holder = (await nodes.getById(node.id))?.reservation;
    throw new NodeLocked(node.uuid, holder ?? 'another host');
  }

  /**
   * @internal One statement, compare-and-set on our reservation (or, for a
   * lock not taken yet, on the node unlocked and unchanged, taking it); then
   * the history and state events of what it carried.
   */
  async writeUnderLock(task: NodeTask, write: NodeWrite): Promise<NodeRecord> {
    const { nodes, nodeLocks, hostname } = this.options;
    const node = task.node;
    const version = task.lockVersion;
    this.options.lease?.guard(task.epoch);
    const updated =
      version === undefined
        ? await nodeLocks.updateReservedBy(node.id, hostname, write.changes)
        : await nodeLocks.updateIfUnreservedVersion(node.id, version, hostname, write.changes);
    if (updated) {
      if (version !== undefined) {
        task.lockVersion = undefined;
        if (updated.reservation === hostname) this.track(task);
      }
      for (const { before, changes } of write.carries) {
        for (const event of historyOfChange(before, changes)) this.options.history?.record(event);
        const to = changes.provisionState;
        if (to !== undefined && to !== before.provisionState) {
          this.options.provisionStates?.provisionStateChanged(node.uuid, before.provisionState, to);
        }
      }
      return updated;
    }
    if (version !== undefined) {
      task.raced = true;
      throw new LockRaced(node.uuid);
    }
    const now = await nodes.getById(node.id);
    if (!now) throw new NodeNotFound(node.uuid);
    // Our reservation was cleared under us (stop, or an orphan cleanup): stop writing.
    throw new NodeLocked(node.uuid, now.reservation ?? 'nobody (lock lost)');
  }

  /**
   * @internal The release, in the same statement as what was left to write
   * with it (writeWithNext); NodeLocked when that finds the lock lost. A lock
   * still to be taken by the first write holds nothing: only what is pending
   * is written.
   */
  async releaseLock(task: NodeTask): Promise<void> {
    if (this.held.get(task.node.id) === task) this.held.delete(task.node.id);
    // Void work writes nothing, not even the release: the reservation under our name may be a
    // newer task's by now; what the void work left is cleaned up when the lease is renewed.
    if (task.void) return;
    if (!task.pending) {
      if (task.lockVersion === undefined) await this.options.nodeLocks.release(task.node.id, this.options.hostname);
      return;
    }
    await this.writeUnderLock(task, task.takePending({ reservation: null }));
  }

  private runInBackground(task: NodeTask, work: BackgroundWork): void {
    const run = (async () => {
      try {
        await work(task);
      } catch (error) {
        task.logger.error('background work failed', { error: (error as Error).message, stack: (error as Error).stack });
      } finally {
        await this.releaseQuietly(task);
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  private async releaseQuietly(task: NodeTask): Promise<void> {
    try {
      await task.release();
    } catch (error) {
      if (task.raced) return; // it never held the lock; withTask runs it again
      task.logger.error('could not release the node lock', { error: (error as Error).message });
    }
  }

  /** The node's interfaces (wrapDriver), remembered for a frozen node, whose interface fields cannot change. */
  private driverOf(node: NodeRecord): NodeDriver {
    let driver = this.driverOfFrozen.get(node);
    if (!driver) {
      driver = this.wrapDriver(this.options.driverFor(node));
      if (Object.isFrozen(node)) this.driverOfFrozen.set(node, driver);
    }
    return driver;
  }

  /** The node's interfaces, with this conductor recorded as conductor_affinity whenever it prepares boot files. */
  private wrapDriver(driver: NodeDriver): NodeDriver {
    let wrapped = this.wrapped.get(driver);
    if (!wrapped) {
      wrapped = this.fenced(this.recordingAffinity(driver));
      this.wrapped.set(driver, wrapped);
    }
    return wrapped;
  }

  /**
   * The node's interfaces, each call under an exclusive lock checked against the lease first
   * (power changes, agent commands, boot files): fenced work does not touch the hardware.
   * Calls under a shared lock (the boot path's reads) go through unchecked.
   */
  private fenced(driver: NodeDriver): NodeDriver {
    const lease = this.options.lease;
    if (!lease) return driver;
    const guarded: Record<string, unknown> = {};
    for (const [kind, implementation] of Object.entries(driver)) {
      if (implementation === null || typeof implementation !== 'object') {
        guarded[kind] = implementation;
        continue;
      }
      const methods = new Map<PropertyKey, unknown>();
      const target = implementation as object;
      // The proxy's own target is an empty object inheriting from the implementation: a proxy
      // may not answer for a frozen property of its target with another value.
      guarded[kind] = new Proxy(Object.create(target) as object, {
        get(_, property) {
          const value = Reflect.get(target, property, target);
          if (typeof value !== 'function') return value;
          let method = methods.get(property);
          if (!method) {
            method = (...args: unknown[]) => {
              const task = args[0];
              if (task instanceof NodeTask && !task.shared) lease.guard(task.epoch);
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
            methods.set(property, method);
          }
          return method;
        },
      });
    }
    return guarded as unknown as NodeDriver;
  }

  private recordingAffinity(driver: NodeDriver): NodeDriver {
    const conductorId = this.options.conductorId;
    const boot = driver.boot;
    // Written with the task's next write or its release: nothing reads it while the lock is held.
    const record = (task: Task): void => {
      const id = conductorId();
      if (id !== undefined && task.node.conductorAffinity !== id) task.writeWithNext({ conductorAffinity: id });
    };
    const recording: BootInterface = Object.create(boot, {
      prepareRamdisk: {
        value: async (task: Task, mode: RamdiskMode) => {
          await boot.prepareRamdisk(task, mode);
          record(task);
        },
      },
      prepareInstance: {
        value: async (task: Task) => {
          await boot.prepareInstance(task);
          record(task);
        },
      },
    });
    return { ...driver, boot: recording };
  }
}
