import { BootConfigNotFound, type SectionSchema, UnsupportedDriverExtension } from '@bmaas/common';
import type { HardwareInterface, InterfaceDescriptor } from './interfaces.js';
import type { Task } from './task.js';

/** How a discovery configuration's refusals name the node they are not for. */
export const DISCOVERY_NODE = 'discovery';

/** Which ramdisk prepareRamdisk boots: the deploy agent (deploy, clean, inspect) or the rescue one. */
export type RamdiskMode = 'deploy' | 'rescue';

/**
 * Network boot of a node: the files a booting machine fetches and how they
 * are served. The conductor calls every method but getBootConfig under the
 * node's exclusive lock.
 */
export interface BootInterface extends HardwareInterface {
  /**
   * True when prepareRamdisk also sets what the machine boots next (a BMC's boot override to
   * its virtual CD, or to an HTTP boot URI): whoever then starts the machine (deploy,
   * cleaning, rescue, inspection) leaves the boot device as it is instead of setting network
   * boot. Absent: false, the caller sets network boot after prepareRamdisk.
   */
  readonly setsBootDevice?: boolean;
  /**
   * Writes the files shared by every node, such as iPXE's root `boot.ipxe`
   * that static DHCP points machines at: its descriptor's `rootFiles`.
   * Called once when the conductor starts, before its file server listens
   * and before it registers; needs no lock. Idempotent: a second call writes
   * nothing new. The default does nothing.
   */
  prepareHttpRoot(): Promise<void>;
  /**
   * Makes the node boot the deploy (or rescue) ramdisk on its next network
   * boot: renders its boot script and links its images. Called before
   * deploy, clean, inspect and rescue. Idempotent: calling it again rewrites
   * the same files. Throws MissingParameterValue when driver_info lacks
   * images, InvalidParameterValue when they are malformed.
   */
  prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void>;
  /** Removes what prepareRamdisk wrote. Idempotent; a missing file is not an error. */
  cleanUpRamdisk(task: Task): Promise<void>;
  /**
   * Makes the node boot its deployed instance (local disk), replacing the
   * ramdisk boot. Called when a deployment finishes. Idempotent.
   */
  prepareInstance(task: Task): Promise<void>;
  /** Removes what prepareInstance wrote. Called on undeploy. Idempotent. */
  cleanUpInstance(task: Task): Promise<void>;
  /**
   * Returns the boot configuration file `name` of the node (e.g. `boot.ipxe`
   * for iPXE), for the boot configuration API. Called under a SHARED lock:
   * it must not write anything, take locks or start timers, and `validate`
   * is not called first. Throws BootConfigNotFound when it cannot produce
   * the file (unknown name, not rendered yet). `name` must never be used as
   * a path. The default throws UnsupportedDriverExtension.
   */
  getBootConfig(task: Task, name: string): Promise<string>;
  /**
   * Returns the discovery configuration `name` (one of the descriptor's
   * `discoveryConfigNames`): what a machine no node has boots when
   * [discovery]enabled, the inspection ramdisk of [discovery]deploy_kernel
   * and deploy_ramdisk with the inspection callback, so that its inventory
   * enrols it. No node, no lock: it must not write anything. Throws
   * BootConfigNotFound for another name, or when discovery is off or cannot
   * work (images or the API unset). The default throws BootConfigNotFound.
   */
  getDiscoveryConfig(name: string): Promise<string>;
}

/**
 * Base for boot interfaces: getBootConfig is an optional extension, so the
 * default refuses as Ironic's base class does.
 */
export abstract class BaseBootInterface implements BootInterface {
  abstract getProperties(): Record<string, string>;
  abstract validate(task: Task): Promise<void>;
  abstract prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void>;
  abstract cleanUpRamdisk(task: Task): Promise<void>;
  abstract prepareInstance(task: Task): Promise<void>;
  abstract cleanUpInstance(task: Task): Promise<void>;

  async prepareHttpRoot(): Promise<void> {}

  async getBootConfig(task: Task, _name: string): Promise<string> {
    throw new UnsupportedDriverExtension(task.node.driver, 'get_boot_config');
  }

  async getDiscoveryConfig(name: string): Promise<string> {
    throw new BootConfigNotFound(DISCOVERY_NODE, name.slice(0, 64));
  }
}

/**
 * A boot interface's descriptor: besides name, options and factory, what
 * the rest of the system asks of it without naming it — the stack, the
 * banner and the conductor's file server go through the registry.
 */
export interface BootInterfaceDescriptor<S extends SectionSchema = SectionSchema>
  extends InterfaceDescriptor<BootInterface, S> {
  /**
   * Files under [deploy]http_root that every machine may fetch, as paths
   * relative to it, written by prepareHttpRoot (iPXE: `boot.ipxe`). A
   * conductor is ready when its file server serves each of them; the stack
   * waits for that and the banner lists them.
   */
  readonly rootFiles: readonly string[];
  /** The `<NAME>`s getBootConfig serves through `/v1/boot/<MAC>/<NAME>` (iPXE: `boot.ipxe`). */
  readonly bootConfigNames: readonly string[];
  /**
   * The `<NAME>`s getDiscoveryConfig serves to a MAC no node has, when
   * discovery is on: what this interface's firmware asks for an unknown
   * machine (iPXE's root script: `discovery.ipxe`; GRUB's root config: `grub.cfg`).
   */
  readonly discoveryConfigNames: readonly string[];
  /**
   * Files under http_root the conductor's file server sends as
   * `text/plain`: file names (`config`) or endings (`.ipxe`). Anything else
   * is sent as bytes.
   */
  readonly textFiles: readonly string[];
  /**
   * Boots a real machine over its network (firmware, DHCP, HTTP): hardware
   * types that drive real machines (`ipmi`, `manual-management`) take every
   * boot interface that says so. False for an interface that boots nothing.
   */
  readonly networkBoot: boolean;
  /**
   * Hardware types that take this interface besides those that take every network boot: the
   * ones whose BMC it boots the machine through (`redfish` for an interface that boots through
   * Redfish virtual media or an HTTP boot URI, which `networkBoot` hardware types such as
   * `ipmi` cannot). `fake-hardware` takes every interface anyway.
   */
  readonly hardwareTypes?: readonly string[];
}
