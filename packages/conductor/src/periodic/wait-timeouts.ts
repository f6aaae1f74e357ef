import { NodeLocked, ProvisionState as S } from '@bmaas/common';
import { errorText, type NodeCheckDeps, ownedByMe } from './node-checks.js';

/** Seconds each timed wait may last ([conductor]*_callback_timeout; 0 = forever). */
export function waitTimeouts(config: NodeCheckDeps['config']): Record<string, number> {
  return {
    [S.DEPLOY_WAIT]: config.deploy_callback_timeout,
    [S.CLEAN_WAIT]: config.clean_callback_timeout,
    [S.INSPECT_WAIT]: config.inspect_wait_timeout,
  };
}

/**
 * Fails the nodes this conductor owns whose wait outlasted its timeout
 * (provision_updated_at is when the wait began). Only overdue nodes are
 * listed, in SQL: in a boot storm thousands of nodes wait at once, and
 * reading and parsing all of them on every pass stopped the conductor for
 * a few hundred milliseconds each minute, in the middle of the storm
 * (docs/performance.md). The runner checks the node again under its lock.
 * Locked nodes are left for the next run. Returns how many were failed.
 */
export async function failTimedOutWaits(deps: NodeCheckDeps): Promise<number> {
  const timeouts = waitTimeouts(deps.config);
  const timed = Object.fromEntries(Object.entries(timeouts).filter(([, seconds]) => seconds > 0));
  if (Object.keys(timed).length === 0) return 0;
  const nodes = await deps.stores.periodicNodes.listForPeriodicTask(deps.self.conductorGroup, deps.self.hardwareTypes, {
    maintenance: false,
    inStateLongerThan: { seconds: timed, now: deps.now() },
  });
  let failed = 0;
  for (const node of nodes) {
    if (!(await ownedByMe(deps, node))) continue;
    try {
      if (await deps.runner.failTimedOutWait(node.uuid, (state) => timeouts[state] ?? 0)) failed++;
    } catch (error) {
      if (!(error instanceof NodeLocked)) {
        deps.logger.warn('could not fail a timed-out wait', { nodeUuid: node.uuid, error: errorText(error) });
      }
    }
  }
  return failed;
}
