import { setTimeout as delay } from 'node:timers/promises';
import { type AllocationRecord, type Logger, type NodeRecord, ResourceNotFound, TemporaryFailure } from '@bmaas/common';
import type { Stores } from '@bmaas/db';

export interface AllocationProcessorDeps {
  stores: Pick<Stores, 'allocations' | 'nodeTraits' | 'conductors'>;
  /** This conductor's id once registered. */
  conductorId: () => number | undefined;
  /** Ironic's retry of a reservation that met locked nodes: attempts of the whole pass, seconds between them. */
  lockRetry: { attempts: number; intervalSeconds: number };
  /** [conductor]heartbeat_timeout: older heartbeats are dead conductors, whose allocations are adopted. */
  heartbeatTimeoutSeconds: number;
  logger: Logger;
}

/** Why an allocation failed, in Ironic's words (after "Failed to process allocation <uuid>: "). */
class AllocationFailed extends Error {}

/**
 * Ironic's allocation processing, on the conductor: a new allocation is taken
 * (create_allocation) and processed in the background; the ones this
 * conductor left in `allocating` are resumed at start, and those of dead
 * conductors adopted by a periodic task. Processing lists the candidate
 * nodes, filters them by traits, tries them in random order (the one named
 * like the allocation first) and claims one with a compare-and-set; a pass
 * that met only locked nodes is run again on those, as Ironic's does.
 */
export class AllocationProcessor {
  private readonly running = new Set<Promise<void>>();
  private readonly logger: Logger;

  constructor(private readonly deps: AllocationProcessorDeps) {
    this.logger = deps.logger.child({ component: 'allocations' });
  }

  /** The create_allocation call: the allocation becomes this conductor's, then is processed in the background. */
  async take(uuid: string): Promise<void> {
    const id = this.id();
    const stored = await this.deps.stores.allocations.getByUuid(uuid);
    const allocation = stored && (await this.deps.stores.allocations.assign(stored, id));
    if (!allocation) throw new ResourceNotFound(`Allocation ${uuid} could not be found.`);
    this.spawn(allocation);
  }

  /** At start: the allocations this conductor was processing when it stopped. */
  async resume(): Promise<number> {
    const left = await this.deps.stores.allocations.listAllocating([this.id()]);
    for (const allocation of left) this.spawn(allocation);
    if (left.length > 0) this.logger.info('resuming allocations', { count: left.length });
    return left.length;
  }

  /**
   * The periodic task: allocations dead conductors left in `allocating`, and
   * those no conductor took for longer than the heartbeat timeout (the API
   * stopped between storing one and handing it over), each taken with a
   * compare-and-set, then processed.
   */
  async adoptOrphans(): Promise<number> {
    const id = this.id();
    let adopted = 0;
    for (const allocation of await this.deps.stores.allocations.listUntaken(this.deps.heartbeatTimeoutSeconds)) {
      const mine = await this.deps.stores.allocations.assign(allocation, id);
      if (!mine) continue;
      this.logger.info('taking an allocation no conductor took', { uuid: allocation.uuid });
      adopted += 1;
      this.spawn(mine);
    }
    const dead = (await this.deps.stores.conductors.listDeadIds(this.deps.heartbeatTimeoutSeconds)).filter(
      (conductor) => conductor !== id,
    );
    for (const allocation of await this.deps.stores.allocations.listAllocating(dead)) {
      const from = allocation.conductorAffinity as number;
      const mine = await this.deps.stores.allocations.takeOver(allocation, from, id);
      if (!mine) continue;
      this.logger.info('taking over allocation', { uuid: allocation.uuid, from });
      adopted += 1;
      this.spawn(mine);
    }
    return adopted;
  }

  /** Waits for the allocations being processed (they are short: database work only). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /** Processes one allocation now; never throws (a failure is the allocation's `error` state). */
  async process(allocation: AllocationRecord): Promise<void> {
    const id = this.id();
    const store = this.deps.stores.allocations;
    try {
      const nodes = await this.candidates(allocation);
      const claimed = await this.claimAny(allocation, nodes, id);
      if (claimed)
        this.logger.info('node reserved for allocation', { uuid: allocation.uuid, nodeUuid: claimed.nodeUuid });
    } catch (error) {
      const reason =
        error instanceof AllocationFailed
          ? `Failed to process allocation ${allocation.uuid}: ${error.message}.`
          : `Unexpected exception during allocation: ${(error as Error).message}`;
      if (error instanceof AllocationFailed) this.logger.warn(reason);
      else this.logger.error('unexpected error processing an allocation', { uuid: allocation.uuid, error: reason });
      try {
        await store.fail(allocation, reason, id);
      } catch (saveError) {
        this.logger.error('could not save the failed allocation', {
          uuid: allocation.uuid,
          error: (saveError as Error).message,
        });
      }
    }
  }

  private spawn(allocation: AllocationRecord): void {
    const work = this.process(allocation).finally(() => this.running.delete(work));
    this.running.add(work);
  }

  private id(): number {
    const id = this.deps.conductorId();
    // Its JSON-RPC server listens just before it registers: a call in between may try another conductor.
    if (id === undefined) throw new TemporaryFailure('The conductor is starting: it is not registered yet.');
    return id;
  }

  /** Ironic's _candidate_nodes: by resource class, candidates and owner; then traits; shuffled, the named one first. */
  private async candidates(allocation: AllocationRecord): Promise<NodeRecord[]> {
    let nodes = await this.deps.stores.allocations.candidateNodes({
      resourceClass: allocation.resourceClass,
      candidateNodes: allocation.candidateNodes,
      owner: allocation.owner,
    });
    if (nodes.length === 0) {
      throw new AllocationFailed(
        allocation.candidateNodes.length > 0
          ? `none of the requested nodes are available and match the resource class ${allocation.resourceClass}`
          : `no available nodes match the resource class ${allocation.resourceClass}`,
      );
    }
    if (allocation.traits.length > 0) {
      const traits = await this.deps.stores.nodeTraits.listMany(nodes.map((node) => node.id));
      nodes = nodes.filter((node) => allocation.traits.every((trait) => traits.get(node.id)?.includes(trait)));
      if (nodes.length === 0)
        throw new AllocationFailed(`no suitable nodes have the requested traits ${allocation.traits.join(', ')}`);
    }
    const ordered = nodes
      .map((node) => ({ node, key: Math.random() }))
      .sort((a, b) => a.key - b.key)
      .map(({ node }) => node);
    const named = ordered.findIndex((node) => allocation.name !== null && node.name === allocation.name);
    if (named > 0) ordered.unshift(...ordered.splice(named, 1));
    return ordered;
  }

  /**
   * Ironic's _allocate_node: each node tried once per pass; the nodes that
   * were locked are tried again after the lock retry interval, up to the
   * attempts. Undefined when the allocation stopped being this conductor's.
   */
  private async claimAny(
    allocation: AllocationRecord,
    candidates: NodeRecord[],
    conductorId: number,
  ): Promise<AllocationRecord | undefined> {
    let nodes = candidates;
    const { attempts, intervalSeconds } = this.deps.lockRetry;
    for (let attempt = 1; ; attempt++) {
      const locked: NodeRecord[] = [];
      for (const node of nodes) {
        const outcome = await this.deps.stores.allocations.claim(allocation, node, conductorId);
        if ('claimed' in outcome) return outcome.claimed;
        if ('lost' in outcome) return undefined;
        if ('locked' in outcome) locked.push(node);
      }
      nodes = locked;
      if (nodes.length === 0) throw new AllocationFailed('all nodes were filtered out during reservation');
      if (attempt >= Math.max(1, attempts))
        throw new AllocationFailed(`could not reserve any of ${nodes.length} suitable nodes`);
      this.logger.debug('candidate nodes are locked; trying again', { uuid: allocation.uuid, locked: nodes.length });
      await delay(intervalSeconds * 1000);
    }
  }
}
