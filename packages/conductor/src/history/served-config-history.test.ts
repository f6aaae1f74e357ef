import { describe, expect, it } from 'vitest';
import type { HistoryEvent } from './node-history-writer.js';
import { ServedConfigHistory } from './served-config-history.js';

describe('ServedConfigHistory', () => {
  it('records a node, name and state once per interval', () => {
    const recorded: HistoryEvent[] = [];
    let now = 1_000_000;
    const served = new ServedConfigHistory({ record: (event) => recorded.push(event) }, 60_000, () => now);
    const waiting = { id: 1, provisionState: 'wait call-back' };
    served.served(waiting, 'boot.ipxe');
    served.served(waiting, 'boot.ipxe');
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      nodeId: 1,
      eventType: 'boot-config',
      event: 'Boot configuration "boot.ipxe" served.',
    });
    // Another name, another node, another state: each recorded at once.
    served.served(waiting, 'grub.cfg');
    served.served({ id: 2, provisionState: 'wait call-back' }, 'boot.ipxe');
    served.served({ id: 1, provisionState: 'clean wait' }, 'boot.ipxe');
    expect(recorded).toHaveLength(4);
    now += 59_999;
    served.served(waiting, 'boot.ipxe');
    expect(recorded).toHaveLength(4);
    now += 1;
    served.served(waiting, 'boot.ipxe');
    expect(recorded).toHaveLength(5);
  });
});
