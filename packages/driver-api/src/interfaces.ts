import type { PowerState } from '@bmaas/common';
import type { InterfaceDeps, Task } from './task.js';

/** Common part of every hardware interface. */
export interface HardwareInterface {
  /**
   * Properties (driver_info keys) this interface reads, with a description
   * each; keys ending in " (required)" must be set.
   */
  getProperties(): Record<string, string>;
  /**
   * Checks the node's fields are usable by this interface.
   * Called before provisioning actions. Throws InvalidParameterValue or
   * MissingParameterValue. Must not change anything.
   */
  validate(task: Task): Promise<void>;
}

/** Powers a node on and off. Calls are idempotent. */
export interface PowerInterface extends HardwareInterface {
  /** Current power state as the hardware reports it. */
  getPowerState(task: Task): Promise<PowerState>;
  /** Moves the hardware to `state` ('power on', 'power off', 'rebooting', …) and returns when done. */
  setPowerState(task: Task, state: PowerState): Promise<void>;
}

/** Boot device settings. Idempotent. */
export interface ManagementInterface extends HardwareInterface {
  /** Sets the next boot device ('pxe', 'disk'); persistent when asked. */
  setBootDevice(task: Task, device: 'pxe' | 'disk', persistent: boolean): Promise<void>;
}

/** What a deploy or clean step asks of the conductor next. */
export type StepOutcome = 'done' | 'wait';

/**
 * Writes an image to a node. The conductor calls these under the node's
 * exclusive lock and moves the node through the state machine from the
 * outcome: 'wait' puts the node in the matching wait state until the agent
 * calls back (continueDeploy / continueCleaning), 'done' finishes at once.
 * Anything thrown fails the action with the error as last_error.
 */
export interface DeployInterface extends HardwareInterface {
  /** Starts a deployment (deploying). */
  deploy(task: Task): Promise<StepOutcome>;
  /** The agent called back during `wait call-back`: finish the deployment. */
  continueDeploy(task: Task): Promise<StepOutcome>;
  /** Undeploys (deleting): powers off and removes the instance's boot files. Idempotent. */
  tearDown(task: Task): Promise<void>;
  /** Starts automated or manual cleaning (cleaning). */
  prepareCleaning(task: Task): Promise<StepOutcome>;
  /** The agent called back during `clean wait`: finish cleaning. */
  continueCleaning(task: Task): Promise<StepOutcome>;
  /** Removes what cleaning prepared. Idempotent. */
  tearDownCleaning(task: Task): Promise<void>;
  /**
   * This conductor now owns the node (ring change): rebuild on its own disk
   * whatever the node's current state needs (e.g. boot files). Idempotent.
   */
  takeOver(task: Task): Promise<void>;
}

/**
 * Inspection: fills in a node's properties and ports from its hardware.
 * The conductor calls these under the node's exclusive lock. In-band
 * implementations boot a ramdisk that posts its inventory to the API; the
 * conductor processes that inventory (properties, ports, storage) itself and
 * then calls continueInspection. Anything thrown fails inspection
 * (`inspect failed`, the error as last_error).
 */
export interface InspectInterface extends HardwareInterface {
  /**
   * Starts inspection (inspecting). 'done': finished in place (out-of-band
   * or fake); 'wait': the node waits in `inspect wait` for its inventory.
   */
  inspectHardware(task: Task): Promise<StepOutcome>;
  /** The inventory arrived and was processed: undo what inspectHardware prepared (ramdisk boot) and power off. */
  continueInspection(task: Task): Promise<void>;
  /** Inspection was aborted or timed out in `inspect wait`: the same tidy-up, best effort. Idempotent. */
  abortInspection(task: Task): Promise<void>;
}

/**
 * How an implementation of an interface kind is made known to the conductor:
 * one descriptor per implementation, listed in the conductor's registry file.
 */
export interface InterfaceDescriptor<I> {
  /** Name used in enabled_*_interfaces and in the node's *_interface field. */
  readonly name: string;
  create(deps: InterfaceDeps): I;
}
