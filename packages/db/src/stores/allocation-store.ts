import type { AllocationRecord, NodeRecord } from '@bmaas/common';
import { rowToRecord } from './case.js';
import { ResourceStore } from './resource-store.js';

export interface CandidateQuery {
  resourceClass: string | null;
  /** Node uuids the allocation may choose from; empty: any. */
  candidateNodes: readonly string[];
}

/** Allocations, and the node-side writes that allocating and releasing a node make. */
export class AllocationStore extends ResourceStore<AllocationRecord> {
  /**
   * Nodes an allocation may take, as Ironic chooses them: `available`, not in
   * maintenance, with a known power state, no instance and no allocation, not
   * locked, of the resource class, among the candidates when there are some.
   */
  async candidateNodes(query: CandidateQuery): Promise<NodeRecord[]> {
    const q = this.db('nodes')
      .select('*')
      .where({ provision_state: 'available', maintenance: false })
      .whereNotNull('power_state')
      .whereNull('instance_uuid')
      .whereNull('allocation_uuid')
      .whereNull('reservation')
      .orderBy('id');
    if (query.resourceClass === null) q.whereNull('resource_class');
    else q.where('resource_class', query.resourceClass);
    if (query.candidateNodes.length > 0) q.whereIn('uuid', query.candidateNodes as string[]);
    return (await q).map((row: Record<string, unknown>) => rowToRecord<NodeRecord>(row));
  }

  /**
   * Gives `node` to the allocation in one transaction when the node is still
   * free (compare-and-set on the node's columns): the node gets the
   * allocation's uuid as `instance_uuid` and `allocation_uuid`, the
   * allocation the node and state `active`. False when someone was faster.
   */
  async claim(allocation: AllocationRecord, node: NodeRecord): Promise<AllocationRecord | undefined> {
    return this.db.transaction(async (trx) => {
      const taken = await trx('nodes')
        .where({ id: node.id, provision_state: 'available', maintenance: false })
        .whereNull('instance_uuid')
        .whereNull('allocation_uuid')
        .whereNull('reservation')
        .update({ instance_uuid: allocation.uuid, allocation_uuid: allocation.uuid, updated_at: trx.fn.now() });
      if (taken !== 1) return undefined;
      return this.update(allocation.id, { nodeId: node.id, state: 'active', lastError: null }, trx);
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

  async fail(allocation: AllocationRecord, error: string): Promise<AllocationRecord | undefined> {
    return this.update(allocation.id, { nodeId: null, state: 'error', lastError: error });
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
