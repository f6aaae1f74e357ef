import type { NodeRecord, PortRecord } from '@bmaas/common';
import type { BootPathChanges, BootPathListener } from '@bmaas/db';

/** A node with its ports, as a shared lock reads it. */
export interface NodeRead {
  node: NodeRecord;
  ports: PortRecord[];
}

/** Reads the nodes among `nodeIds` this conductor may soon serve (prepared by it, waiting). */
export type ServableNodesReader = (nodeIds: readonly number[]) => Promise<NodeRead[]>;

/**
 * The nodes this conductor serves boot configuration requests for, in
 * memory, following the change log (BootPathChangeFeed): the shared lock of a
 * boot request without a query. A node the log names is dropped, then read
 * again if `servable` finds it (in a boot storm, each machine asks once,
 * right after its node entered a wait state: it is held by then); any other
 * node is kept once a boot request read it. It answers only while the
 * feed follows the log, so what a task gets is at most one poll older than
 * the database (a shared lock never kept a node from changing under it
 * anyway). Entries are frozen: tasks share them. The oldest go first past
 * `maxEntries`.
 */
export class SharedNodeCache implements BootPathListener {
  private readonly byUuid = new Map<string, NodeRead>();
  private readonly uuidById = new Map<number, string>();
  /** Moves on every reset or change handed over: a read that raced one is not kept. */
  private generation = 0;

  constructor(
    private readonly maxEntries: number,
    /** Whether the feed currently follows the log (BootPathChangeFeed.following). */
    private readonly following: () => boolean,
    private readonly servable?: ServableNodesReader,
  ) {}

  /** Nodes held (tests, metrics). */
  get size(): number {
    return this.byUuid.size;
  }

  /** The node held for `uuid` while the feed follows the log, without waiting: what read() would answer at once. */
  held(uuid: string): NodeRead | undefined {
    return this.following() ? this.byUuid.get(uuid) : undefined;
  }

  /** The node held for `uuid`, else `load()`'s answer, kept unless a change came in while it was read. */
  async read(uuid: string, load: () => Promise<NodeRead | undefined>): Promise<NodeRead | undefined> {
    if (!this.following()) return load();
    const held = this.byUuid.get(uuid);
    if (held) return held;
    const generation = this.generation;
    const read = await load();
    if (read && generation === this.generation && this.following()) return this.keep(read);
    return read;
  }

  reset(): void {
    this.generation++;
    this.byUuid.clear();
    this.uuidById.clear();
  }

  async changed({ nodeIds }: BootPathChanges): Promise<void> {
    this.generation++;
    for (const id of nodeIds) {
      const uuid = this.uuidById.get(id);
      if (uuid === undefined) continue;
      this.uuidById.delete(id);
      this.byUuid.delete(uuid);
    }
    if (!this.servable) return;
    // Read after the change was seen: newer than it, and a later change comes with a later poll.
    for (const read of await this.servable(nodeIds)) this.keep(read);
  }

  private keep(read: NodeRead): NodeRead {
    const frozen = deepFreeze(read);
    const { uuid, id } = frozen.node;
    this.byUuid.delete(uuid);
    this.byUuid.set(uuid, frozen);
    this.uuidById.set(id, uuid);
    while (this.byUuid.size > this.maxEntries) {
      const oldest = this.byUuid.keys().next().value as string;
      const node = this.byUuid.get(oldest)?.node;
      this.byUuid.delete(oldest);
      if (node) this.uuidById.delete(node.id);
    }
    return frozen;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value) && !(value instanceof Date)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
