import type {
  HardwareComponent,
  HealthState,
  IndicatorState,
  JsonObject,
  PowerState,
  SectionSchema,
  SectionValues,
  VmediaDevice,
} from '@bmaas/common';
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
   * MissingParameterValue. Must not change anything: it may run before the
   * node's lock is taken, and more than once for one action.
   */
  validate(task: Task): Promise<void>;
  /**
   * The conductor is stopping: release what the implementation holds
   * outside any node (sessions opened with BMCs). Optional; called once per
   * instance after the last task finished, best effort (a failure is logged).
   */
  close?(): Promise<void>;
}

/** Powers a node on and off. Calls are idempotent. */
export interface PowerInterface extends HardwareInterface {
  /** Current power state as the hardware reports it; null when it is not known (a fake node nothing powered yet). */
  getPowerState(task: Task): Promise<PowerState | null>;
  /**
   * Moves the hardware to `state` ('power on', 'power off', 'rebooting', …)
   * and returns when the hardware reports it (confirmed, where the hardware
   * can tell). `timeoutSeconds` bounds the wait (Ironic's power timeout);
   * unset = the implementation's default ([conductor]power_state_change_timeout).
   */
  setPowerState(task: Task, state: PowerState, timeoutSeconds?: number): Promise<void>;
}

/** Boot devices as Ironic names them (ironic.common.boot_devices). */
export type BootDevice = 'pxe' | 'disk' | 'cdrom' | 'bios' | 'safe';
export const BOOT_DEVICES: readonly BootDevice[] = ['pxe', 'disk', 'cdrom', 'bios', 'safe'];

/** What getBootDevice reports; null where the hardware cannot tell. */
export interface BootDeviceState {
  bootDevice: BootDevice | null;
  persistent: boolean | null;
}

/** One indicator: whether it can be set, and the states it can show. */
export interface IndicatorInfo {
  readonly: boolean;
  states: IndicatorState[];
}

/** The indicators of a node: component -> indicator id -> what it is. */
export type SupportedIndicators = Partial<Record<HardwareComponent, Record<string, IndicatorInfo>>>;

/** Boot device settings and other out-of-band management. */
export interface ManagementInterface extends HardwareInterface {
  /**
   * Sets the next boot device; persistent = every boot, else the next one only.
   * Idempotent. Throws InvalidParameterValue for a device not in
   * getSupportedBootDevices, and an error when the hardware refuses it.
   */
  setBootDevice(task: Task, device: BootDevice, persistent: boolean): Promise<void>;
  /** The boot device the hardware will use next. Read-only; works under a shared lock. */
  getBootDevice(task: Task): Promise<BootDeviceState>;
  /** The devices setBootDevice accepts for this node. No hardware access needed. */
  getSupportedBootDevices(task: Task): Promise<BootDevice[]>;
  /**
   * Sends a non-maskable interrupt (the guest OS typically dumps and reboots).
   * Throws UnsupportedDriverExtension where the hardware has none.
   */
  injectNmi(task: Task): Promise<void>;
  /**
   * Sets the boot mode the hardware boots in next. Optional: an interface
   * without it cannot change the mode (the conductor answers
   * UnsupportedDriverExtension). The conductor records the mode on success.
   */
  setBootMode?(task: Task, mode: 'bios' | 'uefi'): Promise<void>;
  /** Turns UEFI secure boot on or off. Optional, like setBootMode. */
  setSecureBootState?(task: Task, enabled: boolean): Promise<void>;
  /**
   * Inserts the image at `imageUrl` (http, https, nfs, cifs, smb) in the
   * BMC's virtual `device`. Optional, as the three virtual media methods
   * are: an interface without them has no virtual media (the conductor
   * answers UnsupportedDriverExtension). Idempotent for the same image.
   */
  attachVirtualMedia?(task: Task, device: VmediaDevice, imageUrl: string): Promise<void>;
  /** Ejects the media of the given devices, or of every device when none is given. Idempotent. */
  detachVirtualMedia?(task: Task, devices?: readonly VmediaDevice[]): Promise<void>;
  /** The virtual media devices and what each holds, as the hardware reports them. Read-only. */
  getVirtualMedia?(task: Task): Promise<Record<string, unknown>>;
  /**
   * The node's indicators (LEDs) by component, or those of `component` only.
   * Optional, as the three indicator methods are: an interface without them
   * has no indicators (the conductor answers UnsupportedDriverExtension).
   * Read-only; works under a shared lock.
   */
  getSupportedIndicators?(task: Task, component?: HardwareComponent): Promise<SupportedIndicators>;
  /**
   * Sets an indicator to `state`. Idempotent. Throws InvalidParameterValue for
   * an unknown component or indicator, a read-only indicator, or a state the
   * indicator does not show.
   */
  setIndicatorState?(task: Task, component: HardwareComponent, indicator: string, state: IndicatorState): Promise<void>;
  /** The state an indicator shows. Read-only. Throws InvalidParameterValue for an unknown component or indicator. */
  getIndicatorState?(task: Task, component: HardwareComponent, indicator: string): Promise<IndicatorState>;
  /**
   * The hardware's overall health as the BMC reports it (Ironic 1.109's node
   * `health`), read by power sync. Optional: an interface without it leaves
   * the field null. Null where the BMC cannot tell. Read-only; shared lock.
   */
  getHealth?(task: Task): Promise<HealthState | null>;
}

/** What a deploy or clean step asks of the conductor next. */
export type StepOutcome = 'done' | 'wait';

/** A step as a user names it (Ironic's step dictionary): `interface`.`step` with its arguments. */
export interface UserStep {
  interface: string;
  step: string;
  args?: Record<string, unknown>;
}

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
  /** False when the step runs without the ramdisk booted (Ironic's requires_ramdisk; absent: it needs it). */
  requires_ramdisk?: boolean;
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
  /**
   * Every deploy step of this interface, highest priority first: those of
   * priority 0 run only when a user asks for them (deploy_steps, 1.69).
   */
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
  /**
   * Manual cleaning with disable_ramdisk (1.70): `requested` completed from
   * the steps this interface runs without booting the ramdisk, each marked
   * `requires_ramdisk: false` when it can. Optional: without it every step
   * needs the ramdisk, and such a cleaning fails.
   */
  getCleanStepsWithoutRamdisk?(task: Task, requested: readonly ProvisionStep[]): Promise<ProvisionStep[]>;
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
  /**
   * Runs one service step on an active node (servicing, Ironic's 1.87
   * `service` verb): 'done' goes on with the next step, 'wait' parks the node
   * in `service wait` until the agent calls back. Optional: a deploy
   * interface without it runs no service steps, and a service naming one
   * fails ("node does not support this service step"). The conductor
   * resolves the flow steps `hold`, `power_on`, `power_off` and `reboot` itself.
   */
  executeServiceStep?(task: Task, step: UserStep): Promise<StepOutcome>;
}

/**
 * A configuration section an implementation owns, e.g. iPXE's `[pxe]`, or
 * the options it adds to an extensible core section (PLUGIN_EXTENSIBLE_SECTIONS:
 * `direct`'s agent client options in `[agent]`).
 */
export interface InterfaceConfigSection<S extends SectionSchema = SectionSchema> {
  /**
   * The section's name; one another descriptor took stops the conductor, and
   * so does a core section, unless extensible and none of `options` is the core's.
   */
  readonly section: string;
  /** Its options: convict entries with doc, format, default and env (BMAAS_<SECTION>__<OPTION>). */
  readonly options: S;
  /**
   * Options that, left unset (null), take the value of the option of the same
   * name in another section, as Ironic's per-interface `kernel_append_params`
   * falls back to `[pxe]kernel_append_params`: option name -> section. The
   * interface receives the resolved value.
   */
  readonly fallbacks?: Readonly<Partial<Record<keyof S & string, string>>>;
}

/**
 * How an implementation of an interface kind is made known to the conductor:
 * one descriptor per implementation, listed in the conductor's registry file.
 */
/** Options an implementation adds to extensible core sections, by section. */
export type CoreSectionOptions = Readonly<Record<string, SectionSchema>>;
/** Their values, by section. */
export type CoreSectionValues<C extends CoreSectionOptions> = {
  readonly [Section in keyof C]: SectionValues<C[Section]>;
};

export interface InterfaceDescriptor<
  I,
  S extends SectionSchema = SectionSchema,
  C extends CoreSectionOptions = CoreSectionOptions,
> {
  /** Name used in enabled_*_interfaces and in the node's *_interface field. */
  readonly name: string;
  /**
   * The implementation's own options. The conductor merges every
   * descriptor's section into its schema when it loads its configuration
   * (whether the implementation is enabled or not), checks them as strictly
   * as its own, lists them in the generated reference, and hands the
   * values of the options it declares to `create` as `deps.settings`.
   */
  readonly config?: InterfaceConfigSection<S>;
  /**
   * Options of Ironic's core sections that only this implementation reads
   * (`direct`'s `[deploy]erase_devices_priority`): added to the core
   * section under their Ironic names, checked and listed like the core's,
   * and handed to `create` as `deps.coreSettings`, by section.
   */
  readonly coreOptions?: C;
  /**
   * Enabled when `[DEFAULT]enabled_<kind>_interfaces` is not configured
   * (after the fakes, in registry order): what a conductor with no
   * configuration needs to provision real machines.
   */
  readonly enabledByDefault?: boolean;
  create(deps: InterfaceDeps<SectionValues<S>, CoreSectionValues<C>>): I;
}
