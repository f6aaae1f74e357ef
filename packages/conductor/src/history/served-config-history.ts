import { bootConfigServed } from './history-events.js';
import type { NodeHistoryWriter } from './node-history-writer.js';

/**
 * Records "boot configuration served" once per node, name and provision
 * state within `intervalMs`: the entry says when a machine fetched its
 * configuration, and firmware retrying in a loop (or a boot storm asking
 * again and again) would otherwise write a history row per request.
 */
export class ServedConfigHistory {
  /** Per node id, what was recorded last and when: no key string per request (it showed in the boot path's profile). */
  private readonly lastRecorded = new Map<number, Recorded[]>();

  constructor(
    private readonly history: Pick<NodeHistoryWriter, 'record'>,
    private readonly intervalMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  served(node: { id: number; provisionState: string }, name: string): void {
    const at = this.now();
    let recorded = this.lastRecorded.get(node.id);
    const last = recorded?.find((entry) => entry.name === name && entry.provisionState === node.provisionState);
    if (last !== undefined && at - last.at < this.intervalMs) return;
    if (last !== undefined) {
      last.at = at;
    } else {
      if (recorded === undefined || recorded.length >= 16) {
        // Bounded: forgetting everything at worst records one entry too many per node and name.
        if (this.lastRecorded.size >= 100_000) this.lastRecorded.clear();
        recorded = [];
        this.lastRecorded.set(node.id, recorded);
      }
      recorded.push({ name, provisionState: node.provisionState, at });
    }
    this.history.record(bootConfigServed(node.id, name));
  }
}

/** One name served to a node in one provision state. */
interface Recorded {
  readonly name: string;
  readonly provisionState: string;
  at: number;
}
