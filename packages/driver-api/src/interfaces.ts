import type { JsonObject, PowerState } from '@bmaas/common';
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
 * One deploy or clean step, as Ironic shows it in node.deploy_step /
 * clean_step: the interface that runs it, its name, its priority (higher
 * runs first; 0 = only on request) and its arguments.
 */
export interface ProvisionStep {
  interface: string;
  step: string;
  priority: number;
  args: JsonObject;
}

/**
 * Writes an image to a node, as a list of deploy steps, and cleans it. The
 * conductor calls these under the node's exclusive lock and owns the state
 * machine: a step answering 'wait' puts the node in the matching wait state
 * (wait call-back, clean wait) with the step recorded; every heartbeat of the
 * node's agent then asks check*Step whether that step finished ('done': the
 * conductor goes on with the next step) or not yet ('wait'). Anything thrown
 * fails the action with the error as last_error.
 */
export interface DeployInterface extends HardwareInterface {
  /** The deploy steps of this interface, in the order they run (highest priority first). */
  getDeploySteps(task: Task): Promise<ProvisionStep[]>;
  /** Runs one of those steps (deploying). */
  executeDeployStep(task: Task, step: ProvisionStep): Promise<StepOutcome>;
  /** The agent heartbeated in `wait call-back` while `step` waited: has it finished? Throws when it failed. */
  checkDeployStep(task: Task, step: ProvisionStep): Promise<StepOutcome>;
  /** Undeploys (deleting): powers off and removes the instance's boot files. Idempotent. */
  tearDown(task: Task): Promise<void>;
  /**
   * Starts automated or manual cleaning (cleaning): 'wait' when the node now
   * boots an agent whose steps are read at its first heartbeat, 'done' when
   * there is nothing to clean.
   */
  prepareCleaning(task: Task): Promise<StepOutcome>;
  /**
   * The clean steps to run, read once the agent is up (first heartbeat in
   * `clean wait`): the steps of automated cleaning (priority > 0, highest
   * first), or `requested` (manual cleaning) completed from what the agent offers.
   */
  getCleanSteps(task: Task, requested: readonly ProvisionStep[] | undefined): Promise<ProvisionStep[]>;
  /** Runs one clean step (cleaning). */
  executeCleanStep(task: Task, step: ProvisionStep): Promise<StepOutcome>;
  /** The agent heartbeated in `clean wait` while `step` waited: has it finished? Throws when it failed. */
  checkCleanStep(task: Task, step: ProvisionStep): Promise<StepOutcome>;
  /** Ends cleaning (done, failed or aborted): powers off and removes what prepareCleaning set up. Idempotent. */
  tearDownCleaning(task: Task): Promise<void>;
  /**
   * This conductor now owns the node (ring change): rebuild on its own disk
   * whatever the node's current state needs (e.g. boot files). Idempotent.
   */
  takeOver(task: Task): Promise<void>;
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
