import { CRASH_RECOVERY, NodeLocked, type NodeRecord } from '@bmaas/common';
import type { NodeChanges } from '@bmaas/db';
import { errorText, type NodeCheckDeps, ownedByMe } from './node-checks.js';

const TRANSIENT_STATES = Object.keys(CRASH_RECOVERY);
const PAGE = 500;

/** The failed state and message for a node a conductor left in a transient state. */
export function crashRecoveryChanges(node: NodeRecord, who: string, now: Date): NodeChanges {
  const failed = CRASH_RECOVERY[node.provisionState as keyof typeof CRASH_RECOVERY];
  if (!failed) return {};
  return {
    provisionState: failed,
    targetProvisionState: null,
    provisionUpdatedAt: now,
    lastError: `${who} stopped or died while the node was in "${node.provisionState}".`,
  };
}

/** Conductors whose heartbeat is older than heartbeat_timeout: they will not release their locks. */
async function deadConductors(deps: NodeCheckDeps): Promise<string[]> {
  const timeoutMs = deps.config.heartbeat_timeout * 1000;
  const now = deps.now().getTime();
  const conductors = await deps.stores.conductors.list(deps.config.heartbeat_timeout);
  // A conductor that went offline just now may still be finishing its work: only a stale heartbeat counts.
  return conductors
    .filter((c) => c.hostname !== deps.self.hostname && !c.alive)
    .filter((c) => c.online || (c.updatedAt?.getTime() ?? 0) < now - timeoutMs)
    .map((c) => c.hostname);
}

async function nodesReservedBy(deps: NodeCheckDeps, host: string): Promise<NodeRecord[]> {
  const found: NodeRecord[] = [];
  let marker: string | undefined;
  for (;;) {
    const page = await deps.stores.nodes.list({
      reservation: host,
      limit: PAGE,
      marker,
      sortKey: 'id',
      sortDir: 'asc',
    });
    found.push(...page);
    if (page.length < PAGE) return found;
    marker = page[page.length - 1]?.uuid;
  }
}

/**
 * At start: locks left under this conductor's own name are from its previous
 * run. Nodes it left in a transient state move to the matching failed state;
 * then every such reservation is cleared.
 */
export async function releaseOwnLeftovers(deps: NodeCheckDeps): Promise<number> {
  const { hostname } = deps.self;
  let recovered = 0;
  for (const node of await nodesReservedBy(deps, hostname)) {
    const changes = crashRecoveryChanges(node, `Conductor ${hostname}`, deps.now());
    if (changes.provisionState === undefined) continue;
    if (await deps.stores.nodes.update(node.id, { ...changes, reservation: null }, { reservation: hostname })) {
      recovered++;
      deps.logger.warn('recovered a node left by the previous run', {
        nodeUuid: node.uuid,
        provisionState: changes.provisionState,
      });
    }
  }
  const cleared = await deps.stores.nodeLocks.clearReservations(hostname);
  return recovered + cleared;
}

/**
 * Cleans up after conductors that died: locks held by a conductor whose
 * heartbeat is stale are released (with a compare-and-set on the dead
 * holder), and nodes left in a transient state with no lock at all are moved
 * to the matching failed state. Only nodes this conductor owns are touched.
 * Returns how many nodes were recovered.
 */
export async function recoverOrphanedNodes(deps: NodeCheckDeps): Promise<number> {
  let recovered = 0;
  for (const host of await deadConductors(deps)) {
    for (const node of await nodesReservedBy(deps, host)) {
      if (!(await ownedByMe(deps, node))) continue;
      const changes = { ...crashRecoveryChanges(node, `Conductor ${host}`, deps.now()), reservation: null };
      if (await deps.stores.nodes.update(node.id, changes, { reservation: host })) {
        recovered++;
        deps.logger.warn('released the lock of a dead conductor', {
          nodeUuid: node.uuid,
          deadConductor: host,
          provisionState: changes.provisionState ?? node.provisionState,
        });
      }
    }
  }
  const unlocked = await deps.stores.periodicNodes.listForPeriodicTask(
    deps.self.conductorGroup,
    deps.self.hardwareTypes,
    {
      unreserved: true,
      provisionStateIn: TRANSIENT_STATES,
    },
  );
  for (const node of unlocked) {
    if (!(await ownedByMe(deps, node))) continue;
    try {
      await deps.tasks.withTask(node.uuid, { purpose: 'recover a transient state' }, async (task) => {
        // Under the lock: nobody else works on it, so the state is a leftover.
        const changes = crashRecoveryChanges(task.node, 'The conductor working on it', deps.now());
        if (changes.provisionState === undefined) return;
        await task.updateNode(changes);
        recovered++;
        task.logger.warn('recovered a node left in a transient state', { provisionState: changes.provisionState });
      });
    } catch (error) {
      if (!(error instanceof NodeLocked)) {
        deps.logger.warn('could not recover a node', { nodeUuid: node.uuid, error: errorText(error) });
      }
    }
  }
  return recovered;
}
