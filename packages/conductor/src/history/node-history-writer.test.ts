import { createSilentLogger } from '@bmaas/common';
import type { NewNodeHistory } from '@bmaas/db';
import { describe, expect, it } from 'vitest';
import { NodeHistoryWriter } from './node-history-writer.js';

function writer(recording?: boolean) {
  const written: NewNodeHistory[][] = [];
  const history = new NodeHistoryWriter({
    store: { append: async (entries) => void written.push([...entries]) },
    conductor: 'c1',
    logger: createSilentLogger(),
    flushIntervalMs: 60_000,
    recording,
  });
  return { history, written };
}

const event = { nodeId: 7, eventType: 'provisioning', severity: 'info', event: 'x' } as const;

describe('NodeHistoryWriter', () => {
  it('writes what was recorded in one append, naming its conductor', async () => {
    const { history, written } = writer();
    history.record(event);
    history.record({ ...event, event: 'y' });
    await history.close();
    expect(written).toHaveLength(1);
    expect(written[0]?.map((e) => [e.event, e.conductor])).toEqual([
      ['x', 'c1'],
      ['y', 'c1'],
    ]);
  });

  it('records nothing with [conductor]node_history = false', async () => {
    const { history, written } = writer(false);
    history.record(event);
    await history.close();
    expect(written).toEqual([]);
  });
});
