import type { BootLookupRecord } from '@bmaas/common';
import type { BootPathChanges, BootPathListener, PortStore } from '@bmaas/db';

/**
 * Every port's MAC with what the boot path needs of its node (uuid, state,
 * driver, group), in memory: the MAC lookup without a query. Filled by one
 * read at start (a reset of the BootPathChangeFeed), then kept current from
 * the change log: the ports of each changed node are read again. It only answers while the feed follows the log, so at most one
 * poll behind the database; the controller trusts it only for nodes it may
 * serve and asks PostgreSQL about anything else (a MAC enrolled, or a node
 * that entered a wait state, since the last poll is served at once).
 */
export class BootLookupIndex implements BootPathListener {
  private byAddress = new Map<string, BootLookupRecord>();
  private addressesOfNode = new Map<number, Set<string>>();
  private loaded = false;

  constructor(
    private readonly ports: Pick<PortStore, 'bootLookupPage' | 'bootLookupOfNodes'>,
    /** Whether the feed currently follows the log (BootPathChangeFeed.following). */
    private readonly following: () => boolean,
    /** Ports read per query when the index is filled. */
    private readonly pageSize = 5000,
  ) {}

  /** The node of `mac` as of the last poll; undefined when unknown or when the index cannot be trusted now. */
  get(mac: string): BootLookupRecord | undefined {
    return this.loaded && this.following() ? this.byAddress.get(mac) : undefined;
  }

  /** MACs held (metrics, tests). */
  get size(): number {
    return this.byAddress.size;
  }

  async reset(): Promise<void> {
    this.loaded = false;
    this.byAddress = new Map();
    this.addressesOfNode = new Map();
    let after = 0;
    for (;;) {
      const rows = await this.ports.bootLookupPage(after, this.pageSize);
      for (const { portId, ...row } of rows) this.add(row);
      if (rows.length < this.pageSize) break;
      after = (rows.at(-1) as { portId: number }).portId;
    }
    this.loaded = true;
  }

  async changed({ nodeIds }: BootPathChanges): Promise<void> {
    // A port moved between nodes names both, and a MAC is unique: the ports of these nodes are all that changed.
    const rows = await this.ports.bootLookupOfNodes(nodeIds);
    for (const nodeId of nodeIds) {
      for (const address of [...(this.addressesOfNode.get(nodeId) ?? [])]) this.remove(address);
    }
    for (const row of rows) this.add(row);
  }

  private add({ address, ...record }: BootLookupRecord & { address: string }): void {
    this.remove(address);
    this.byAddress.set(address, record);
    let addresses = this.addressesOfNode.get(record.nodeId);
    if (!addresses) {
      addresses = new Set();
      this.addressesOfNode.set(record.nodeId, addresses);
    }
    addresses.add(address);
  }

  private remove(address: string): void {
    const record = this.byAddress.get(address);
    if (!record) return;
    this.byAddress.delete(address);
    const addresses = this.addressesOfNode.get(record.nodeId);
    addresses?.delete(address);
    if (addresses?.size === 0) this.addressesOfNode.delete(record.nodeId);
  }
}
