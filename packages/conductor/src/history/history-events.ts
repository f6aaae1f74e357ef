import type { NodeRecord } from '@bmaas/common';
import type { NodeChanges } from '@bmaas/db';
import type { HistoryEvent } from './node-history-writer.js';

/**
 * The history entries a change written under a node's lock makes: a
 * provision state change (info) and a new last_error (error). Power errors
 * are of type "power", the rest "provisioning".
 */
export function historyOfChange(node: NodeRecord, changes: NodeChanges, now = new Date()): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  const to = changes.provisionState;
  const target = changes.targetProvisionState === undefined ? node.targetProvisionState : changes.targetProvisionState;
  // Where the node is after the change and how long it was in the state it left (Ironic's 1.115 fields).
  const since = node.provisionUpdatedAt ?? node.createdAt;
  const moved = to !== undefined && to !== node.provisionState;
  const where = {
    state: to ?? node.provisionState,
    targetProvisionState: target,
    durationSeconds: moved ? Math.max(0, Math.floor((now.getTime() - since.getTime()) / 1000)) : null,
  };
  if (moved) {
    events.push({
      nodeId: node.id,
      eventType: 'provisioning',
      severity: 'info',
      event: `Provision state changed from "${node.provisionState}" to "${to}"${target ? ` (target "${target}")` : ''}.`,
      ...where,
    });
  }
  if (changes.lastError && changes.lastError !== node.lastError) {
    events.push({
      ...where,
      nodeId: node.id,
      eventType: 'targetPowerState' in changes && to === undefined ? 'power' : 'provisioning',
      severity: 'error',
      event: changes.lastError,
    });
  }
  return events;
}

/** A boot configuration file this conductor served for a node. */
export function bootConfigServed(nodeId: number, name: string): HistoryEvent {
  return { nodeId, eventType: 'boot-config', severity: 'info', event: `Boot configuration "${name}" served.` };
}
