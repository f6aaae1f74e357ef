import { type Logger, NoValidHost, TemporaryFailure } from '@bmaas/common';
import type { AliveConductor } from '@bmaas/db';
import HashRing from 'hashring';

/** What routing needs to know of a node. */
export interface NodeRoutingKey {
  uuid: string;
  driver: string;
  conductorGroup: string;
}

export interface AliveConductorSource {
  listAlive(heartbeatTimeoutSeconds: number): Promise<AliveConductor[]>;
}

export interface ConductorRingOptions {
  conductors: AliveConductorSource;
  /** [conductor]heartbeat_timeout, seconds. */
  heartbeatTimeout: number;
  /** [DEFAULT]hash_ring_reset_interval, seconds. */
  resetInterval: number;
  logger: Logger;
  /** Milliseconds clock (tests pass a fake). */
  now?: () => number;
}

/** `<conductor group>:<hardware type>`, as Ironic keys its rings. */
export function ringKey(conductorGroup: string, driver: string): string {
  return `${conductorGroup.toLowerCase()}:${driver}`;
}

/**
 * Virtual nodes per conductor (each hashed 4 times by hashring). hashring's
 * default of 40 lets one of three conductors stray past ±30% of an even share
 * now and then; 160 keeps the spread near ±20% for any host names.
 */
const VNODES_PER_CONDUCTOR = 160;

/**
 * Node uuids each ring remembers the owner of. A boot storm or a periodic
 * task over more nodes than that would hash each lookup again.
 */
const OWNERS_REMEMBERED = 100_000;

/**
 * One ring and the owners it named, in a Map: hashring's own cache (an LRU
 * kept in a plain object, relinked on every hit) cost more on the boot path
 * than the lookup it saves, and it is kept at one entry.
 */
class NodeOwners {
  private readonly owners = new Map<string, string>();

  constructor(private readonly ring: HashRing) {}

  ownerOf(uuid: string): string {
    let owner = this.owners.get(uuid);
    if (owner === undefined) {
      owner = this.ring.get(uuid);
      // Bounded: forgetting them all at worst hashes each node once more.
      if (this.owners.size >= OWNERS_REMEMBERED) this.owners.clear();
      this.owners.set(uuid, owner);
    }
    return owner;
  }
}

interface RingSet {
  /**
   * The ring of each `<group>:<hardware type>` (ringKey), by group in lower
   * case, then hardware type: a lookup builds no key string.
   */
  byGroup: Map<string, Map<string, NodeOwners>>;
  members: Map<string, string[]>;
  conductorCount: number;
  builtAt: number;
}

/**
 * Consistent hash rings over the alive conductors, one per conductor group and
 * hardware type; a node maps to one conductor by its uuid. Rings are cached
 * for resetInterval and rebuilt once more when a key is missing.
 */
export class ConductorRing {
  private current: RingSet | undefined;
  private building: Promise<RingSet> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: ConductorRingOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Hostname of the conductor owning the node. TemporaryFailure when none is alive, NoValidHost when none serves its key. */
  async hostFor(node: NodeRoutingKey): Promise<string> {
    const group = node.conductorGroup.toLowerCase();
    // Fresh rings without a wait: an await per call showed in the boot path's profile.
    let set = this.fresh() ?? (await this.rebuild());
    let ring = ringOf(set, group, node.driver);
    if (!ring && set.builtAt < this.now()) {
      // A conductor may have joined since the last build: look once more.
      set = await this.rebuild();
      ring = ringOf(set, group, node.driver);
    }
    if (set.conductorCount === 0) throw new TemporaryFailure('No alive conductor is registered.');
    if (!ring) {
      throw new NoValidHost(
        `No conductor service registered which supports driver ${node.driver} for conductor group "${node.conductorGroup}".`,
      );
    }
    return ring.ownerOf(node.uuid);
  }

  /**
   * The owner at once, when fresh rings hold the node's key; undefined when
   * only hostFor can tell (rings to read again, a key to look for, or an
   * error to raise). The boot path asks this first: a promise per request
   * showed in its profile.
   */
  hostNow(node: NodeRoutingKey): string | undefined {
    const set = this.fresh();
    // Groups are kept in lower case; a node's in another case is left to hostFor, which folds it.
    const ring = set ? ringOf(set, node.conductorGroup, node.driver) : undefined;
    return ring ? ring.ownerOf(node.uuid) : undefined;
  }

  /** Any alive conductor, at random (work that belongs to no node). TemporaryFailure when none is alive. */
  async anyHost(): Promise<string> {
    let set = await this.rings();
    if (set.conductorCount === 0 && set.builtAt < this.now()) set = await this.rebuild();
    const hosts = [...new Set([...set.members.values()].flat())];
    if (hosts.length === 0) throw new TemporaryFailure('No alive conductor is registered.');
    return hosts[Math.floor(Math.random() * hosts.length)] as string;
  }

  /** Members of every ring, for diagnostics and takeover. */
  async members(): Promise<ReadonlyMap<string, string[]>> {
    return (await this.rings()).members;
  }

  /** Makes the next call read the members again (rings are kept if they did not change). */
  invalidate(): void {
    if (this.current) this.current = { ...this.current, builtAt: Number.NEGATIVE_INFINITY };
  }

  /** The rings while they are younger than the reset interval. */
  private fresh(): RingSet | undefined {
    const set = this.current;
    return set && this.now() - set.builtAt < this.options.resetInterval * 1000 ? set : undefined;
  }

  private async rings(): Promise<RingSet> {
    return this.fresh() ?? this.rebuild();
  }

  private rebuild(): Promise<RingSet> {
    // Concurrent callers share one query.
    this.building ??= this.build().finally(() => {
      this.building = undefined;
    });
    return this.building;
  }

  private async build(): Promise<RingSet> {
    const builtAt = this.now();
    const alive = await this.options.conductors.listAlive(this.options.heartbeatTimeout);
    const members = new Map<string, string[]>();
    for (const conductor of alive) {
      for (const driver of conductor.drivers) {
        const key = ringKey(conductor.conductorGroup, driver);
        members.set(key, [...(members.get(key) ?? []), conductor.hostname]);
      }
    }
    for (const hosts of members.values()) hosts.sort();
    const previous = this.current;
    // Unchanged members: the same rings, whose owners remembered stay valid.
    if (previous && sameMembers(previous.members, members)) {
      this.current = { ...previous, members, conductorCount: alive.length, builtAt };
      return this.current;
    }
    const rings = new Map<string, NodeOwners>();
    const byGroup = new Map<string, Map<string, NodeOwners>>();
    for (const conductor of alive) {
      for (const driver of conductor.drivers) {
        const key = ringKey(conductor.conductorGroup, driver);
        let ring = rings.get(key);
        if (!ring) {
          const hosts = members.get(key) ?? [];
          ring = new NodeOwners(
            new HashRing(hosts, 'md5', { 'vnode count': VNODES_PER_CONDUCTOR, 'max cache size': 1 }),
          );
          rings.set(key, ring);
        }
        const group = conductor.conductorGroup.toLowerCase();
        let byDriver = byGroup.get(group);
        if (!byDriver) {
          byDriver = new Map();
          byGroup.set(group, byDriver);
        }
        byDriver.set(driver, ring);
      }
    }
    this.options.logger.info('hash ring rebuilt', { rings: Object.fromEntries(members) });
    this.current = { byGroup, members, conductorCount: alive.length, builtAt };
    return this.current;
  }
}

/** The ring of `group` (in lower case) and `driver`, if any. */
function ringOf(set: RingSet, group: string, driver: string): NodeOwners | undefined {
  return set.byGroup.get(group)?.get(driver);
}

function sameMembers(a: ReadonlyMap<string, string[]>, b: ReadonlyMap<string, string[]>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, hosts] of a) if (b.get(key)?.join(',') !== hosts.join(',')) return false;
  return true;
}
