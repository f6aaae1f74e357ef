import { bootConfigServed } from './history-events.js';
import type { NodeHistoryWriter } from './node-history-writer.js';

/**
 * Records "boot configuration served" once per node, name and provision
 * state within `intervalMs`: the entry says when a machine fetched its
 * configuration, and firmware retrying in a loop (or a boot storm asking
 * again and again) would otherwise write a history row per request.
 */
export class ServedConfigHistory {
  private readonly lastRecorded = new Map<string, number>();

  constructor(
    private readonly history: Pick<NodeHistoryWriter, 'record'>,
    private readonly intervalMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  served(node: { id: number; provisionState: string }, name: string): void {
    const key = `${node.id} ${node.provisionState} ${name}`;
    const at = this.now();
    const last = this.lastRecorded.get(key);
    if (last !== undefined && at - last < this.intervalMs) return;
    // Bounded: forgetting everything at worst records one entry too many per node.
    if (this.lastRecorded.size >= 100_000) this.lastRecorded.clear();
    this.lastRecorded.set(key, at);
    this.history.record(bootConfigServed(node.id, name));
  }
}
