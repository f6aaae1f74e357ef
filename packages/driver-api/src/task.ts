import type { AgentCommandObserver } from '@bmaas/agent-client';
import type { ConfigSection, Logger, NodeRecord, PortRecord } from '@bmaas/common';
import type { BootInterface } from './boot.js';
import type { InstanceImages } from './instance-images.js';
import type { DeployInterface, ManagementInterface, PowerInterface } from './interfaces.js';
import type { OptionalInterfaceKinds } from './optional-interfaces.js';

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
    | 'deployStep'
    | 'cleanStep'
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
  /**
   * Changes `node` at once and persists the changes with the task's next
   * updateNode, or with the release of the lock when none comes, in the same
   * statement (exclusive lock only; throws like updateNode under a shared
   * one). For what nobody outside this task needs to see before the task
   * writes again or lets the node go, such as a fake interface's record of
   * its hardware: one write fewer. A lock lost meanwhile fails that later
   * write, so nothing is written outside the lock either way.
   */
  writeWithNext(changes: NodeUpdate): void;
}

/**
 * What every interface implementation is created with: its own options and
 * the few facts of the conductor an interface may need, not the whole
 * configuration.
 */
export interface InterfaceDeps<
  Settings = Readonly<Record<string, unknown>>,
  CoreSettings = Readonly<Record<string, Readonly<Record<string, unknown>>>>,
> {
  /** The options of the descriptor's own configuration section it declares, checked and frozen; {} when it declares none. */
  settings: Settings;
  /** The options it adds to core sections (descriptor.coreOptions), by section, checked and frozen; {} when none. */
  coreSettings: CoreSettings;
  /** The core's boot file options of [deploy]: where boot files go and how machines fetch them. */
  deploy: BootFileSettings;
  /** The [discovery] section: the inspection ramdisk a machine no node has boots (getDiscoveryConfig). */
  discovery: ConfigSection<'discovery'>;
  /** [api]public_endpoint: the API URL machines and agents call back; null when unset. */
  apiPublicEndpoint: string | null;
  /** [inspector]callback_endpoint_override, else [api]public_endpoint: the API an inspection ramdisk posts its inventory to. */
  inspectionCallbackEndpoint: string | null;
  /** [conductor]file_url_allowed_paths: where local images (paths, file:// URLs) may come from. */
  fileUrlAllowedPaths: readonly string[];
  /** [conductor]power_state_change_timeout, in seconds: how long a power change may take to hold. */
  powerStateChangeTimeout: number;
  /** Logger of the component (`{ component: '<kind>:<name>' }`). */
  logger: Logger;
  /** Identity of this conductor, as registered (host or host:port). */
  conductorHostname: string;
  /** Hears of agent commands that did not succeed (the conductor's metrics); absent, they are not counted. */
  agentCommands?: AgentCommandObserver | undefined;
  /** The conductor's instance image cache (image_download_source local); absent, local downloads are refused. */
  instanceImages?: InstanceImages | undefined;
}

/**
 * The options of the conductor's [deploy] an interface may use: http_root
 * (where boot files and images go), http_url (where machines fetch them) and
 * the in-memory cache of the boot configurations read back from http_root.
 * The file server's own options stay with the conductor.
 */
export type BootFileSettings = Pick<
  ConfigSection<'deploy'>,
  'http_root' | 'http_url' | 'boot_config_cache_bytes' | 'boot_config_cache_check_interval'
>;

/** The interfaces of one node: the core kinds and every optional one. */
export interface NodeDriver extends Readonly<OptionalInterfaceKinds> {
  readonly boot: BootInterface;
  readonly deploy: DeployInterface;
  readonly power: PowerInterface;
  readonly management: ManagementInterface;
}
