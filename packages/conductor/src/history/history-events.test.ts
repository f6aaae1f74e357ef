import { createTestNode } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import { historyOfChange } from './history-events.js';

describe('historyOfChange', () => {
  const node = createTestNode({
    id: 7,
    provisionState: 'deploying',
    targetProvisionState: 'active',
    provisionUpdatedAt: new Date('2026-01-01T00:00:00Z'),
  });
  const now = new Date('2026-01-01T00:01:30.900Z');

  it('records where the node went and how long it was in the state it left', () => {
    const events = historyOfChange(node, { provisionState: 'wait call-back' }, now);
    expect(events).toEqual([
      {
        nodeId: 7,
        eventType: 'provisioning',
        severity: 'info',
        event: 'Provision state changed from "deploying" to "wait call-back" (target "active").',
        state: 'wait call-back',
        targetProvisionState: 'active',
        durationSeconds: 90,
      },
    ]);
  });

  it('an error without a state change names the state the node is in, with no duration', () => {
    const [event] = historyOfChange(node, { lastError: 'boom' }, now);
    expect(event).toMatchObject({ severity: 'error', state: 'deploying', targetProvisionState: 'active' });
    expect(event?.durationSeconds).toBeNull();
  });

  it('a failure that moves the node counts the time from its last provision change', () => {
    const events = historyOfChange(
      node,
      { provisionState: 'deploy failed', targetProvisionState: null, lastError: 'boom' },
      now,
    );
    expect(events.map((e) => [e.severity, e.state, e.targetProvisionState, e.durationSeconds])).toEqual([
      ['info', 'deploy failed', null, 90],
      ['error', 'deploy failed', null, 90],
    ]);
  });
});
