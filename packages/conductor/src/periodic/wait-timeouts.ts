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
 * (provision_updated_at is when the wait began). Locked nodes are left for
 * the next run. Returns how many were failed.
 */
export async function failTimedOutWaits(deps: NodeCheckDeps): Promise<number> {
  const timeouts = waitTimeouts(deps.config);
  const states = Object.keys(timeouts).filter((state) => (timeouts[state] ?? 0) > 0);
  if (states.length === 0) return 0;
  const nodes = await deps.stores.nodes.listInStates(states, {
    drivers: deps.self.hardwareTypes,
    conductorGroup: deps.self.conductorGroup,
  });
  const now = deps.now().getTime();
  let failed = 0;
  for (const node of nodes) {
    const since = node.provisionUpdatedAt ?? node.updatedAt ?? node.createdAt;
    const limit = timeouts[node.provisionState] ?? 0;
    if (node.maintenance || now - since.getTime() <= limit * 1000) continue;
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
