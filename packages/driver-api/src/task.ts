import type { BmaasConfig, Logger, NodeRecord, PortRecord } from '@bmaas/common';
import type { BootInterface } from './boot.js';
import type { DeployInterface, InspectInterface, ManagementInterface, PowerInterface } from './interfaces.js';

/** Node fields a hardware interface may change through its task. */
export type NodeUpdate = Partial<
  Pick<
    NodeRecord,
    | 'driverInternalInfo'
    | 'instanceInfo'
    | 'powerState'
    | 'targetPowerState'
    | 'lastError'
    | 'conductorAffinity'
    | 'provisionState'
    | 'targetProvisionState'
  >
>;

/**
 * What a hardware interface works on: one node, its ports and the lock the
 * conductor took for it. Interfaces never take locks themselves.
 */
export interface Task {
  /** Snapshot of the node when the task was created (refreshed by updateNode). */
  readonly node: NodeRecord;
  readonly ports: readonly PortRecord[];
  /** True for a shared (read-only) lock: updateNode then throws. */
  readonly shared: boolean;
  /** Logger carrying the node uuid and request id. */
  readonly logger: Logger;
  readonly requestId: string | undefined;
  /** The node's interface implementations, as named by its *_interface fields. */
  readonly driver: NodeDriver;
  /** Persists changes to the node (exclusive lock only) and refreshes `node`. */
  updateNode(changes: NodeUpdate): Promise<NodeRecord>;
}

/** What every interface implementation is created with. */
export interface InterfaceDeps {
  config: BmaasConfig;
  /** Logger of the component (`{ component: '<kind>:<name>' }`). */
  logger: Logger;
  /** Identity of this conductor, as registered (host or host:port). */
  conductorHostname: string;
}

/** The interfaces of one node. */
export interface NodeDriver {
  readonly boot: BootInterface;
  readonly deploy: DeployInterface;
  readonly power: PowerInterface;
  readonly management: ManagementInterface;
  readonly inspect: InspectInterface;
}
