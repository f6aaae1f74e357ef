import { createHash, timingSafeEqual } from 'node:crypto';
import {
  AGENT_TOKEN_KEY,
  AGENT_TOKEN_PREGENERATED_KEY,
  AGENT_URL_KEY,
  AGENT_VERIFY_CA_KEY,
  newAgentToken,
} from '@bmaas/agent-client';
import type { JsonObject, NodeRecord } from '@bmaas/common';
import type { AgentLookupNode } from '@bmaas/rpc-client';
import type { TaskManager } from '../task-manager.js';

export { AGENT_TOKEN_KEY, newAgentToken };
/** What every lookup after the first one gets instead of the token. */
export const MASKED_AGENT_TOKEN = '******';
/**
 * Facts about one running agent (token, URL, certificate, the steps it
 * offered); a new action (a new boot) makes them stale, as upstream wipes them.
 */
const AGENT_SESSION_KEYS: readonly string[] = [
  AGENT_TOKEN_KEY,
  AGENT_TOKEN_PREGENERATED_KEY,
  AGENT_URL_KEY,
  AGENT_VERIFY_CA_KEY,
  'agent_cached_deploy_steps',
];

/**
 * Whether `given` is the token that was issued, in constant time: both sides
 * are hashed first, so neither their content nor their length shows in the
 * comparison's timing. No token issued matches nothing.
 */
export function agentTokenMatches(issued: unknown, given: string): boolean {
  if (typeof issued !== 'string' || issued === '') return false;
  const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(issued), digest(given));
}

/** driver_internal_info without the previous agent's token and callback URL. */
export function withoutAgentSession(info: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(info).filter(([key]) => !AGENT_SESSION_KEYS.includes(key)));
}

function hasToken(node: NodeRecord): boolean {
  const token = node.driverInternalInfo[AGENT_TOKEN_KEY];
  return typeof token === 'string' && token !== '';
}

/**
 * `get_node_with_token`: reads the node under a shared lock; only when no
 * token was issued yet does it take the exclusive lock, issue one and store
 * it. The token is answered once; every later lookup gets "******", so a
 * second party looking the node up cannot heartbeat in the agent's place.
 */
export async function getNodeWithToken(
  tasks: TaskManager,
  nodeUuid: string,
  requestId: string | undefined,
): Promise<AgentLookupNode> {
  return tasks.withTask(nodeUuid, { shared: true, purpose: 'agent lookup', requestId }, async (task) => {
    let token = MASKED_AGENT_TOKEN;
    if (!hasToken(task.node)) {
      await task.upgradeLock();
      // Another lookup may have issued one while we waited for the lock.
      if (!hasToken(task.node)) {
        token = newAgentToken();
        await task.updateNode({ driverInternalInfo: { ...task.node.driverInternalInfo, [AGENT_TOKEN_KEY]: token } });
        task.logger.info('agent token issued');
      }
    }
    const { node } = task;
    const info = { ...node.driverInternalInfo };
    if (AGENT_TOKEN_KEY in info) info[AGENT_TOKEN_KEY] = MASKED_AGENT_TOKEN;
    return {
      uuid: node.uuid,
      properties: node.properties,
      instance_info: node.instanceInfo,
      driver_internal_info: info,
      agent_token: token,
    };
  });
}
