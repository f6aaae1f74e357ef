import { ConductorFenced, NodeLocked } from '@bmaas/common';
import type { PeriodicNodeRow } from '@bmaas/db';
import { errorText, type NodeCheckDeps, ownedByMe } from './node-checks.js';

/** Nodes taken over at once: enough to overlap database round trips, few enough to leave RPCs room in the pool. */
const TAKEOVER_CONCURRENCY = 4;

/**
 * Takeover: when the ring's members change (a conductor died, joined or
 * left), the nodes this conductor now owns that another conductor prepared
 * (conductor_affinity) get their boot environment rebuilt here, under the
 * exclusive lock, and conductor_affinity becomes this conductor. A run that
 * could not take every node (locked, failed) is repeated on the next check.
 */
export class TakeoverCheck {
  private seenMembers: string | undefined;

  constructor(private readonly deps: NodeCheckDeps) {}

  /** Compares the ring with the last one handled; takes nodes over when it changed. */
  async run(): Promise<number> {
    const members = await this.deps.ring.members();
    const signature = JSON.stringify([...members.entries()].sort(([a], [b]) => a.localeCompare(b)));
    if (signature === this.seenMembers) return 0;
    const { taken, complete } = await this.takeOverNodes();
    if (complete) this.seenMembers = signature;
    return taken;
  }

  private async takeOverNodes(): Promise<{ taken: number; complete: boolean }> {
    const { stores, self, tasks, logger } = this.deps;
    const myId = self.id();
    if (myId === undefined) return { taken: 0, complete: false };
    const started = Date.now();
    // As Ironic: maintenance nodes are left alone; a node nobody prepared needs nothing.
    const nodes = await stores.periodicNodes.listForPeriodicTask(self.conductorGroup, self.hardwareTypes, {
      maintenance: false,
      preparedByOtherThan: myId,
    });
    const mine: PeriodicNodeRow[] = [];
    for (const node of nodes) if (await ownedByMe(this.deps, node)) mine.push(node);
    let taken = 0;
    let complete = true;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < mine.length) {
        const node = mine[next++] as PeriodicNodeRow;
        try {
          await tasks.withTask(node.uuid, { purpose: 'takeover' }, async (task) => {
            if (task.node.conductorAffinity === myId) return;
            const previous = task.node.conductorAffinity;
            await task.driver.deploy.takeOver(task);
            // Preparing boot files already recorded us; a takeover that prepares nothing records it here.
            if (task.node.conductorAffinity !== myId) await task.updateNode({ conductorAffinity: myId });
            task.logger.info('took the node over', {
              previousConductorId: previous,
              provisionState: task.node.provisionState,
            });
          });
          taken++;
        } catch (error) {
          // A locked node is retried on the next check, and so is one refused while fenced;
          // other failures would only fail again.
          if (error instanceof NodeLocked || error instanceof ConductorFenced) complete = false;
          logger.warn('takeover of a node failed', {
            nodeUuid: node.uuid,
            error: errorText(error),
            retry: !complete,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(TAKEOVER_CONCURRENCY, mine.length) }, worker));
    if (taken > 0) logger.info('takeover done', { taken, complete, durationMs: Date.now() - started });
    return { taken, complete };
  }
}
