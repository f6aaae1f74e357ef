import { findTransition, type ProvisionEvent, ProvisionState as S } from '@bmaas/common';
import type { NodeChanges } from '@bmaas/db';
import { withoutAgentSession } from '../agent/agent-token.js';
import type { ConductorTask } from '../task-manager.js';

/** Events that move within one action, so the action's target stays. */
const KEEPS_TARGET: ReadonlySet<string> = new Set(['wait', 'resume']);

/**
 * Moves the node along the transition table by an internal event (done,
 * wait, resume, fail, clean), stamping provision_updated_at. Reaching a
 * stable or failed state clears target_provision_state. A wait ends the
 * work under the lock (the node waits for its agent or its operator), so
 * that state is written with the release, in one statement (writeWithNext),
 * unless the work writes again.
 */
export async function advance(
  task: ConductorTask,
  event: ProvisionEvent,
  now: () => Date,
  changes: NodeChanges = {},
): Promise<void> {
  const from = task.node.provisionState;
  const transition = findTransition(from, event);
  if (!transition) throw new Error(`no transition from "${from}" on "${event}"`);
  // Undeploy passes through cleaning on its way to the same target.
  const keepTarget = KEEPS_TARGET.has(event) || (from === S.DELETING && event === 'clean');
  const write: NodeChanges = {
    provisionState: transition.to,
    targetProvisionState: transition.target ?? (keepTarget ? task.node.targetProvisionState : null),
    provisionUpdatedAt: now(),
    ...changes,
  };
  if (event === 'wait') task.writeWithNext(write);
  else await task.updateNode(write);
}

/**
 * Ends the current action in its failed state (the table's `fail` event)
 * with the error as last_error; a state without one keeps its state and only
 * records the error.
 */
export async function failAction(task: ConductorTask, lastError: string, now: () => Date): Promise<void> {
  if (findTransition(task.node.provisionState, 'fail')) {
    // The agent that ran the action is gone or about to be: its session and steps end here.
    await advance(task, 'fail', now, {
      lastError,
      deployStep: {},
      cleanStep: {},
      driverInternalInfo: withoutAgentSession(task.node.driverInternalInfo),
    });
  } else {
    await task.updateNode({ lastError, targetProvisionState: null });
  }
}
