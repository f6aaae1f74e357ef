import type { Task } from '@bmaas/driver-api';
import { REDFISH_PROPERTIES } from './driver-info.js';
import { type RedfishDeps, RedfishNode } from './redfish-node.js';

/**
 * What every interface of the redfish hardware type shares: the driver_info it reads, its
 * validation (parsing it), and the conductor's one Redfish client, whose sessions it logs
 * out of when the conductor stops.
 */
export abstract class RedfishInterfaceBase {
  constructor(protected readonly deps: RedfishDeps) {}

  getProperties(): Record<string, string> {
    return { ...REDFISH_PROPERTIES };
  }

  async validate(task: Task): Promise<void> {
    new RedfishNode(this.deps, task.node);
  }

  /** Logs out of the BMC sessions of the conductor's client (shared: the first interface closed does it). */
  async close(): Promise<void> {
    await this.deps.client.close();
  }
}
