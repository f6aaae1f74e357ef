import type { BmaasConfig, Logger } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import type { ConductorRing, NodeRoutingKey } from '@bmaas/rpc-client';
import type { ProvisioningRunner } from '../provisioning/runner.js';
import type { TaskManager } from '../task-manager.js';

/** This conductor, as the periodic checks need it. */
export interface ConductorSelf {
  hostname: string;
  conductorGroup: string;
  hardwareTypes: readonly string[];
  /** Database id once registered. */
  id(): number | undefined;
}

/** What the periodic node checks work with. */
export interface NodeCheckDeps {
  stores: Stores;
  ring: ConductorRing;
  tasks: TaskManager;
  runner: ProvisioningRunner;
  self: ConductorSelf;
  config: BmaasConfig['conductor'];
  logger: Logger;
  now(): Date;
}

/** True when the ring maps the node to this conductor. */
export async function ownedByMe(deps: NodeCheckDeps, node: NodeRoutingKey): Promise<boolean> {
  return (await deps.ring.hostFor(node)) === deps.self.hostname;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
