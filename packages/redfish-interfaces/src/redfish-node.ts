import type { NodeRecord } from '@bmaas/common';
import { parseRedfishDriverInfo, type RedfishTarget } from './driver-info.js';
import type { RedfishClient, RedfishResource } from './redfish-client.js';
import type { RedfishSettings } from './redfish-config.js';

/** What every redfish interface is made with: the conductor's one client and its [redfish] options. */
export interface RedfishDeps {
  client: RedfishClient;
  settings: RedfishSettings;
  /** [conductor]power_state_change_timeout, seconds. */
  powerStateChangeTimeout: number;
  /** Pause between two reads while waiting for the hardware (ms). */
  pollIntervalMs?: number;
}

/** A node's service and system, read once per call (once per scope when given one). */
export class RedfishNode {
  readonly target: RedfishTarget;

  constructor(
    private readonly deps: RedfishDeps,
    node: NodeRecord,
    /** Reads of the system share one GET within this scope (a task; see RedfishClient.get). */
    private readonly scope?: object,
  ) {
    this.target = parseRedfishDriverInfo(node, deps.settings.auth_type);
  }

  get client(): RedfishClient {
    return this.deps.client;
  }

  systemPath(): Promise<string> {
    return this.deps.client.systemPath(this.target);
  }

  async system(): Promise<{ path: string; body: RedfishResource }> {
    const path = await this.systemPath();
    return { path, body: await this.deps.client.get(this.target, path, this.scope) };
  }
}

/** A nested object of a resource ({} when absent). */
export function objectAt(resource: RedfishResource, key: string): RedfishResource {
  const value = resource[key];
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as RedfishResource) : {};
}

/** A string array of a resource (annotations such as X@Redfish.AllowableValues), or undefined. */
export function stringsAt(resource: RedfishResource, key: string): string[] | undefined {
  const value = resource[key];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : undefined;
}
