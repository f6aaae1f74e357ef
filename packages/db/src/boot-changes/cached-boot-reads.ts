import type { BootLookupRecord, NodeRecord, PortRecord } from '@bmaas/common';
import type { NodeStore } from '../stores/node-store.js';
import type { PortStore } from '../stores/port-store.js';
import { type BootChangeSource, macKey, nodeKey } from './boot-change-feed.js';
import { BootReadCache } from './boot-read-cache.js';

/**
 * The API's MAC lookup with its answers kept until a change names the MAC or
 * its node (a state change, a port moved or removed, a node deleted). An
 * unknown MAC's answer is kept until a port with that address appears.
 */
export class CachedBootLookup implements Pick<PortStore, 'bootLookup'> {
  private readonly cache: BootReadCache<BootLookupRecord>;

  constructor(
    private readonly ports: Pick<PortStore, 'bootLookup'>,
    changes: BootChangeSource,
    maxEntries?: number,
  ) {
    this.cache = new BootReadCache<BootLookupRecord>({
      changes,
      keysOf: (address, found) => (found ? [macKey(address), nodeKey(found.nodeUuid)] : [macKey(address)]),
      maxEntries,
    });
  }

  bootLookup(address: string): Promise<BootLookupRecord | undefined> {
    return this.cache.get(address.toLowerCase(), (key) => this.ports.bootLookup(key));
  }
}

type NodeWithPorts = { node: NodeRecord; ports: PortRecord[] };

/**
 * A conductor's read of a node with its ports for the boot path's shared
 * lock, kept until a change names the node (any update of it, or of one of
 * its ports). The records are shared between the tasks that read them: they
 * must not be modified.
 */
export class CachedNodeReads implements Pick<NodeStore, 'getByUuidWithPorts'> {
  private readonly cache: BootReadCache<NodeWithPorts>;

  constructor(
    private readonly nodes: Pick<NodeStore, 'getByUuidWithPorts'>,
    changes: BootChangeSource,
    maxEntries?: number,
  ) {
    this.cache = new BootReadCache<NodeWithPorts>({
      changes,
      keysOf: (uuid) => [nodeKey(uuid)],
      maxEntries,
    });
  }

  getByUuidWithPorts(uuid: string): Promise<NodeWithPorts | undefined> {
    return this.cache.get(uuid.toLowerCase(), (key) => this.nodes.getByUuidWithPorts(key));
  }
}
