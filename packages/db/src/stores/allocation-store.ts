import type { AllocationRecord, NodeRecord } from '@bmaas/common';
import { rowToRecord } from './case.js';
import { ResourceStore } from './resource-store.js';

export interface CandidateQuery {
  resourceClass: string | null;
  /** Node uuids the allocation may choose from; empty: any. */
  candidateNodes: readonly string[];
  /** The allocation's owner: only nodes it owns or leases (Ironic's `project` filter); null: any. */
  owner: string | null;
}

/** Why a node could not be given to an allocation, or the allocation as it is now that it has the node. */
export type ClaimOutcome =
  | { claimed: AllocationRecord }
  /** The node still fits but was locked by a conductor when tried: worth trying again. */
  | { locked: true }
  /** The node no longer fits (taken, in maintenance, no longer available, another resource class). */
  | { unsuitable: true }
  /** The allocation is no longer this conductor's to process (deleted, adopted by another, or done). */
  | { lost: true };

/** Allocations, and the node-side writes that allocating and releasing a node make. */
export class AllocationStore extends ResourceStore<AllocationRecord> {
  /**
   * Nodes an allocation may take, as Ironic lists them: `available`, not in
   * maintenance, with a known power state, no instance and no allocation, of
   * the resource class, among the candidates when there are some, owned or
   * leased by the allocation's owner when it has one. Locked nodes are
   * listed too: taking one is retried (Ironic's NodeLocked retry).
   */
  async candidateNodes(query: CandidateQuery): Promise<NodeRecord[]> {
    const q = this.db('nodes')
      .select('*')
      .where({ provision_state: 'available', maintenance: false })
      .whereNotNull('power_state')
      .whereNull('instance_uuid')
      .whereNull('allocation_uuid')
      .orderBy('id');
    if (query.resourceClass === null) q.whereNull('resource_class');
    else q.where('resource_class', query.resourceClass);
    if (query.candidateNodes.length > 0) q.whereIn('uuid', query.candidateNodes as string[]);
    if (query.owner !== null) {
      const owner = query.owner;
      q.andWhere((w) => w.where('owner', owner).orWhere('lessee', owner));
    }
    return (await q).map((row: Record<string, unknown>) => rowToRecord<NodeRecord>(row));
  }

  /**
   * Makes `conductorId` the conductor processing a new allocation (still
   * `allocating`, processed by none). False when it is gone or taken.
   */
  async assign(allocation: AllocationRecord, conductorId: number): Promise<AllocationRecord | undefined> {
    const count = await this.db('allocations')
      .where({ id: allocation.id, state: 'allocating' })
      .whereNull('conductor_affinity')
      .update({ conductor_affinity: conductorId, updated_at: this.db.fn.now() });
    return count === 1 ? this.getById(allocation.id) : undefined;
  }

  /** Allocations still `allocating` that one of `conductorIds` was processing. */
  async listAllocating(conductorIds: readonly number[]): Promise<AllocationRecord[]> {
    if (conductorIds.length === 0) return [];
    const rows = await this.select()
      .where('allocations.state', 'allocating')
      .whereIn('allocations.conductor_affinity', conductorIds as number[])
      .orderBy('allocations.id');
    return rows.map((row: Record<string, unknown>) => rowToRecord<AllocationRecord>(row));
  }

  /**
   * Allocations still `allocating` that no conductor took, older than
   * `olderThanSeconds` (by the database clock): the API that stored one
   * stopped before a conductor took it.
   */
  async listUntaken(olderThanSeconds: number): Promise<AllocationRecord[]> {
    const rows = await this.select()
      .where('allocations.state', 'allocating')
      .whereNull('allocations.conductor_affinity')
      .whereRaw('allocations.created_at < now() - make_interval(secs => ?)', [olderThanSeconds])
      .orderBy('allocations.id');
    return rows.map((row: Record<string, unknown>) => rowToRecord<AllocationRecord>(row));
  }

  /**
   * Moves an allocation still `allocating` from a dead conductor to `to`
   * (compare-and-set on the dead one): of several conductors adopting it,
   * one does. Undefined when another was faster or it is done.
   */
  async takeOver(allocation: AllocationRecord, from: number, to: number): Promise<AllocationRecord | undefined> {
    const count = await this.db('allocations')
      .where({ id: allocation.id, state: 'allocating', conductor_affinity: from })
      .update({ conductor_affinity: to, updated_at: this.db.fn.now() });
    return count === 1 ? this.getById(allocation.id) : undefined;
  }

  /**
   * Gives `node` to the allocation in one transaction when the node still
   * fits and is not locked (compare-and-set on the node's columns) and the
   * allocation is still `allocating` under `conductorId`: the node gets the
   * allocation's uuid as `instance_uuid` and `allocation_uuid`, the
   * allocation the node and state `active`. Otherwise it says why not.
   */
  async claim(allocation: AllocationRecord, node: NodeRecord, conductorId: number): Promise<ClaimOutcome> {
    const lost = new Error('allocation lost');
    return this.db
      .transaction(async (trx): Promise<ClaimOutcome> => {
        const fits = trx('nodes')
          .where({ id: node.id, provision_state: 'available', maintenance: false })
          .whereNull('instance_uuid')
          .whereNull('allocation_uuid');
        if (allocation.resourceClass === null) fits.whereNull('resource_class');
        else fits.where('resource_class', allocation.resourceClass);
        const taken = await fits
          .clone()
          .whereNull('reservation')
          .update({ instance_uuid: allocation.uuid, allocation_uuid: allocation.uuid, updated_at: trx.fn.now() });
        if (taken !== 1) {
          // Still fitting: it was locked (or its lock went a moment ago): worth another try.
          const stillFits = await fits.clone().first('id');
          return stillFits ? { locked: true } : { unsuitable: true };
        }
        const mine = await trx('allocations')
          .where({ id: allocation.id, state: 'allocating', conductor_affinity: conductorId })
          .update({ node_id: node.id, state: 'active', last_error: null, updated_at: trx.fn.now() });
        // Thrown to roll the node's write back.
        if (mine !== 1) throw lost;
        return { claimed: (await this.getById(allocation.id, trx)) as AllocationRecord };
      })
      .catch((error: unknown): ClaimOutcome => {
        if (error === lost) return { lost: true };
        throw error;
      });
  }

  /**
   * Backfills an allocation for a node deployed without one: the node keeps
   * (or gets) the allocation's uuid as instance_uuid. False when the node has
   * an allocation or another instance by now.
   */
  async backfill(allocation: AllocationRecord, node: NodeRecord): Promise<AllocationRecord | undefined> {
    return this.db.transaction(async (trx) => {
      const taken = await trx('nodes')
        .where({ id: node.id })
        .whereNull('allocation_uuid')
        .andWhere((w) => w.whereNull('instance_uuid').orWhere('instance_uuid', allocation.uuid))
        .update({ instance_uuid: allocation.uuid, allocation_uuid: allocation.uuid, updated_at: trx.fn.now() });
      if (taken !== 1) return undefined;
      return this.update(allocation.id, { nodeId: node.id, state: 'active', lastError: null }, trx);
    });
  }

  /** Records the failure of an allocation still `allocating` under `conductorId`; undefined when it is not. */
  async fail(allocation: AllocationRecord, error: string, conductorId: number): Promise<AllocationRecord | undefined> {
    const count = await this.db('allocations')
      .where({ id: allocation.id, state: 'allocating', conductor_affinity: conductorId })
      .update({ node_id: null, state: 'error', last_error: error, updated_at: this.db.fn.now() });
    return count === 1 ? this.getById(allocation.id) : undefined;
  }

  /** Deletes the allocation and frees its node (instance_uuid and allocation_uuid cleared) in one transaction. */
  async release(allocation: AllocationRecord): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      await trx('nodes')
        .where({ allocation_uuid: allocation.uuid })
        .update({ instance_uuid: null, allocation_uuid: null, updated_at: trx.fn.now() });
      return (await trx('allocations').where({ id: allocation.id }).delete()) > 0;
    });
  }
}
