/**
 * Provision states, events and the transition table, as data. Strings are
 * Ironic's exactly, so operators' scripts and the `baremetal` CLI's `--wait`
 * logic see what they expect.
 */
export const ProvisionState = {
  ENROLL: 'enroll',
  VERIFYING: 'verifying',
  MANAGEABLE: 'manageable',
  AVAILABLE: 'available',
  ACTIVE: 'active',
  ERROR: 'error',
  RESCUE: 'rescue',
  CLEANING: 'cleaning',
  CLEAN_WAIT: 'clean wait',
  CLEAN_FAILED: 'clean failed',
  CLEAN_HOLD: 'clean hold',
  DEPLOYING: 'deploying',
  DEPLOY_WAIT: 'wait call-back',
  DEPLOY_FAILED: 'deploy failed',
  DEPLOY_HOLD: 'deploy hold',
  DELETING: 'deleting',
  INSPECTING: 'inspecting',
  INSPECT_WAIT: 'inspect wait',
  INSPECT_FAILED: 'inspect failed',
  ADOPTING: 'adopting',
  ADOPT_FAILED: 'adopt failed',
  RESCUING: 'rescuing',
  RESCUE_WAIT: 'rescue wait',
  RESCUE_FAILED: 'rescue failed',
  UNRESCUING: 'unrescuing',
  UNRESCUE_FAILED: 'unrescue failed',
  SERVICING: 'servicing',
  SERVICE_WAIT: 'service wait',
  SERVICE_FAILED: 'service failed',
  SERVICE_HOLD: 'service hold',
} as const;
export type ProvisionState = (typeof ProvisionState)[keyof typeof ProvisionState];
export const ALL_PROVISION_STATES: readonly ProvisionState[] = Object.values(ProvisionState);

const S = ProvisionState;

/** The `* wait` states: a booting ramdisk is expected (`[api]restrict_boot_config`). */
export const WAIT_STATES: ReadonlySet<ProvisionState> = new Set([
  S.DEPLOY_WAIT,
  S.CLEAN_WAIT,
  S.INSPECT_WAIT,
  S.RESCUE_WAIT,
  S.SERVICE_WAIT,
]);

/** States in which an agent may look its node up (`[api]restrict_lookup`). */
export const LOOKUP_STATES: ReadonlySet<ProvisionState> = new Set([
  S.DEPLOYING,
  S.DEPLOY_WAIT,
  S.CLEANING,
  S.CLEAN_WAIT,
  S.INSPECTING,
  S.INSPECT_WAIT,
  S.RESCUING,
  S.RESCUE_WAIT,
  S.SERVICE_WAIT,
]);

/** Stable states: nothing is in progress; a node may be deleted from some of them. */
export const STABLE_STATES: ReadonlySet<ProvisionState> = new Set([
  S.ENROLL,
  S.MANAGEABLE,
  S.AVAILABLE,
  S.ACTIVE,
  S.ERROR,
  S.RESCUE,
]);

/** States a node may be deleted from without maintenance mode. */
export const DELETE_ALLOWED_STATES: ReadonlySet<ProvisionState> = new Set([S.ENROLL, S.MANAGEABLE, S.AVAILABLE]);

/** Transient states a conductor works in; a crash there means the matching failure. */
export const CRASH_RECOVERY: Readonly<Partial<Record<ProvisionState, ProvisionState>>> = {
  [S.VERIFYING]: S.ENROLL,
  [S.CLEANING]: S.CLEAN_FAILED,
  [S.DEPLOYING]: S.DEPLOY_FAILED,
  [S.DELETING]: S.ERROR,
  [S.INSPECTING]: S.INSPECT_FAILED,
  [S.ADOPTING]: S.ADOPT_FAILED,
  [S.RESCUING]: S.RESCUE_FAILED,
  [S.UNRESCUING]: S.UNRESCUE_FAILED,
  [S.SERVICING]: S.SERVICE_FAILED,
};

/** Waits that time out, with the state they fail to. */
export const WAIT_TIMEOUT_FAILURE: Readonly<Partial<Record<ProvisionState, ProvisionState>>> = {
  [S.DEPLOY_WAIT]: S.DEPLOY_FAILED,
  [S.CLEAN_WAIT]: S.CLEAN_FAILED,
  [S.INSPECT_WAIT]: S.INSPECT_FAILED,
  [S.RESCUE_WAIT]: S.RESCUE_FAILED,
  [S.SERVICE_WAIT]: S.SERVICE_FAILED,
};

export const ProvisionEvent = {
  MANAGE: 'manage',
  PROVIDE: 'provide',
  DEPLOY: 'deploy',
  REBUILD: 'rebuild',
  DELETE: 'delete',
  CLEAN: 'clean',
  INSPECT: 'inspect',
  ADOPT: 'adopt',
  RESCUE: 'rescue',
  UNRESCUE: 'unrescue',
  ABORT: 'abort',
  UNHOLD: 'unhold',
  SERVICE: 'service',
  /** Internal events fired by the conductor, never by users. */
  DONE: 'done',
  WAIT: 'wait',
  RESUME: 'resume',
  FAIL: 'fail',
  HOLD: 'hold',
} as const;
export type ProvisionEvent = (typeof ProvisionEvent)[keyof typeof ProvisionEvent];

/** Events a user may fire through the API. */
export const USER_EVENTS: ReadonlySet<ProvisionEvent> = new Set([
  'manage',
  'provide',
  'deploy',
  'rebuild',
  'delete',
  'clean',
  'inspect',
  'adopt',
  'rescue',
  'unrescue',
  'abort',
  'unhold',
  'service',
]);

/** `PUT …/states/provision` targets and the event each fires. */
export const PROVISION_TARGETS: Readonly<Record<string, ProvisionEvent>> = {
  active: 'deploy',
  deploy: 'deploy',
  rebuild: 'rebuild',
  deleted: 'delete',
  undeploy: 'delete',
  manage: 'manage',
  provide: 'provide',
  clean: 'clean',
  inspect: 'inspect',
  adopt: 'adopt',
  rescue: 'rescue',
  unrescue: 'unrescue',
  abort: 'abort',
  unhold: 'unhold',
  service: 'service',
};

export interface Transition {
  from: ProvisionState;
  event: ProvisionEvent;
  to: ProvisionState;
  /** Stable state the action aims at, shown as target_provision_state. */
  target?: ProvisionState;
}

const t = (from: ProvisionState, event: ProvisionEvent, to: ProvisionState, target?: ProvisionState): Transition =>
  target ? { from, event, to, target } : { from, event, to };

/** The whole table. Order does not matter; (from, event) pairs are unique. */
export const TRANSITIONS: readonly Transition[] = [
  // Enrolment and verification.
  t(S.ENROLL, 'manage', S.VERIFYING, S.MANAGEABLE),
  t(S.VERIFYING, 'done', S.MANAGEABLE),
  t(S.VERIFYING, 'fail', S.ENROLL),
  // Cleaning: provide (automated) and manual clean.
  t(S.MANAGEABLE, 'provide', S.CLEANING, S.AVAILABLE),
  t(S.MANAGEABLE, 'clean', S.CLEANING, S.MANAGEABLE),
  t(S.CLEANING, 'wait', S.CLEAN_WAIT),
  t(S.CLEANING, 'done', S.AVAILABLE),
  t(S.CLEANING, 'fail', S.CLEAN_FAILED),
  t(S.CLEANING, 'hold', S.CLEAN_HOLD),
  t(S.CLEAN_WAIT, 'resume', S.CLEANING),
  t(S.CLEAN_WAIT, 'fail', S.CLEAN_FAILED),
  t(S.CLEAN_WAIT, 'abort', S.CLEAN_FAILED),
  t(S.CLEAN_HOLD, 'unhold', S.CLEAN_WAIT),
  t(S.CLEAN_HOLD, 'abort', S.CLEAN_FAILED),
  t(S.CLEAN_FAILED, 'manage', S.MANAGEABLE),
  t(S.AVAILABLE, 'manage', S.MANAGEABLE),
  // Deployment.
  t(S.AVAILABLE, 'deploy', S.DEPLOYING, S.ACTIVE),
  t(S.DEPLOYING, 'wait', S.DEPLOY_WAIT),
  t(S.DEPLOYING, 'done', S.ACTIVE),
  t(S.DEPLOYING, 'fail', S.DEPLOY_FAILED),
  t(S.DEPLOYING, 'hold', S.DEPLOY_HOLD),
  t(S.DEPLOY_WAIT, 'resume', S.DEPLOYING),
  t(S.DEPLOY_WAIT, 'fail', S.DEPLOY_FAILED),
  t(S.DEPLOY_WAIT, 'abort', S.DEPLOY_FAILED),
  t(S.DEPLOY_HOLD, 'unhold', S.DEPLOY_WAIT),
  t(S.DEPLOY_HOLD, 'abort', S.DEPLOY_FAILED),
  t(S.DEPLOY_FAILED, 'deploy', S.DEPLOYING, S.ACTIVE),
  t(S.DEPLOY_FAILED, 'rebuild', S.DEPLOYING, S.ACTIVE),
  t(S.ACTIVE, 'rebuild', S.DEPLOYING, S.ACTIVE),
  // Tear down.
  t(S.ACTIVE, 'delete', S.DELETING, S.AVAILABLE),
  t(S.DEPLOY_WAIT, 'delete', S.DELETING, S.AVAILABLE),
  t(S.DEPLOY_FAILED, 'delete', S.DELETING, S.AVAILABLE),
  t(S.ERROR, 'delete', S.DELETING, S.AVAILABLE),
  t(S.RESCUE, 'delete', S.DELETING, S.AVAILABLE),
  t(S.RESCUE_WAIT, 'delete', S.DELETING, S.AVAILABLE),
  t(S.RESCUE_FAILED, 'delete', S.DELETING, S.AVAILABLE),
  t(S.UNRESCUE_FAILED, 'delete', S.DELETING, S.AVAILABLE),
  t(S.DELETING, 'clean', S.CLEANING),
  t(S.DELETING, 'fail', S.ERROR),
  t(S.ERROR, 'rebuild', S.DEPLOYING, S.ACTIVE),
  // Inspection.
  t(S.MANAGEABLE, 'inspect', S.INSPECTING, S.MANAGEABLE),
  t(S.ENROLL, 'inspect', S.INSPECTING, S.MANAGEABLE),
  t(S.INSPECTING, 'wait', S.INSPECT_WAIT),
  t(S.INSPECTING, 'done', S.MANAGEABLE),
  t(S.INSPECTING, 'fail', S.INSPECT_FAILED),
  t(S.INSPECT_WAIT, 'resume', S.INSPECTING),
  t(S.INSPECT_WAIT, 'done', S.MANAGEABLE),
  t(S.INSPECT_WAIT, 'fail', S.INSPECT_FAILED),
  t(S.INSPECT_WAIT, 'abort', S.INSPECT_FAILED),
  t(S.INSPECT_FAILED, 'manage', S.MANAGEABLE),
  t(S.INSPECT_FAILED, 'inspect', S.INSPECTING, S.MANAGEABLE),
  // Adoption.
  t(S.MANAGEABLE, 'adopt', S.ADOPTING, S.ACTIVE),
  t(S.ADOPTING, 'done', S.ACTIVE),
  t(S.ADOPTING, 'fail', S.ADOPT_FAILED),
  t(S.ADOPT_FAILED, 'adopt', S.ADOPTING, S.ACTIVE),
  t(S.ADOPT_FAILED, 'manage', S.MANAGEABLE),
  // Rescue.
  t(S.ACTIVE, 'rescue', S.RESCUING, S.RESCUE),
  t(S.RESCUE, 'rescue', S.RESCUING, S.RESCUE),
  t(S.RESCUING, 'wait', S.RESCUE_WAIT),
  t(S.RESCUING, 'done', S.RESCUE),
  t(S.RESCUING, 'fail', S.RESCUE_FAILED),
  t(S.RESCUE_WAIT, 'resume', S.RESCUING),
  t(S.RESCUE_WAIT, 'fail', S.RESCUE_FAILED),
  t(S.RESCUE_WAIT, 'abort', S.RESCUE_FAILED),
  t(S.RESCUE_FAILED, 'rescue', S.RESCUING, S.RESCUE),
  t(S.RESCUE_FAILED, 'unrescue', S.UNRESCUING, S.ACTIVE),
  t(S.RESCUE, 'unrescue', S.UNRESCUING, S.ACTIVE),
  t(S.UNRESCUING, 'done', S.ACTIVE),
  t(S.UNRESCUING, 'fail', S.UNRESCUE_FAILED),
  t(S.UNRESCUE_FAILED, 'rescue', S.RESCUING, S.RESCUE),
  t(S.UNRESCUE_FAILED, 'unrescue', S.UNRESCUING, S.ACTIVE),
  // Servicing an active node (Ironic's 1.87 service verb). Every state of a service aims at active.
  t(S.ACTIVE, 'service', S.SERVICING, S.ACTIVE),
  t(S.SERVICING, 'wait', S.SERVICE_WAIT, S.ACTIVE),
  t(S.SERVICING, 'done', S.ACTIVE),
  t(S.SERVICING, 'fail', S.SERVICE_FAILED),
  t(S.SERVICING, 'hold', S.SERVICE_HOLD, S.ACTIVE),
  t(S.SERVICE_WAIT, 'resume', S.SERVICING, S.ACTIVE),
  t(S.SERVICE_WAIT, 'hold', S.SERVICE_HOLD, S.ACTIVE),
  t(S.SERVICE_WAIT, 'fail', S.SERVICE_FAILED),
  t(S.SERVICE_WAIT, 'abort', S.SERVICE_FAILED),
  t(S.SERVICE_WAIT, 'delete', S.DELETING, S.AVAILABLE),
  t(S.SERVICE_HOLD, 'unhold', S.SERVICE_WAIT, S.ACTIVE),
  t(S.SERVICE_HOLD, 'service', S.SERVICING, S.ACTIVE),
  t(S.SERVICE_HOLD, 'fail', S.SERVICE_FAILED),
  t(S.SERVICE_HOLD, 'abort', S.SERVICE_FAILED),
  t(S.SERVICE_FAILED, 'service', S.SERVICING, S.ACTIVE),
  t(S.SERVICE_FAILED, 'rescue', S.RESCUING, S.RESCUE),
  t(S.SERVICE_FAILED, 'wait', S.SERVICE_WAIT, S.ACTIVE),
  t(S.SERVICE_FAILED, 'hold', S.SERVICE_HOLD, S.ACTIVE),
  t(S.SERVICE_FAILED, 'delete', S.DELETING, S.AVAILABLE),
  // Abort of a failed service: the node is active again, its instance untouched.
  t(S.SERVICE_FAILED, 'abort', S.ACTIVE),
  // Verification may also be re-run from a failed clean/inspect via manage (above).
];

const TABLE: ReadonlyMap<string, Transition> = new Map(TRANSITIONS.map((tr) => [`${tr.from}\u0000${tr.event}`, tr]));

/** The transition for (state, event), or undefined when the event is not allowed there. */
export function findTransition(from: string, event: string): Transition | undefined {
  return TABLE.get(`${from}\u0000${event}`);
}

/** Events allowed from a state, e.g. to say what a user may do next. */
export function allowedEvents(from: string): ProvisionEvent[] {
  return TRANSITIONS.filter((tr) => tr.from === from).map((tr) => tr.event);
}

export function isProvisionState(value: string): value is ProvisionState {
  return (ALL_PROVISION_STATES as readonly string[]).includes(value);
}

export const PowerState = {
  ON: 'power on',
  OFF: 'power off',
  REBOOT: 'rebooting',
  SOFT_REBOOT: 'soft rebooting',
  SOFT_POWER_OFF: 'soft power off',
} as const;
export type PowerState = (typeof PowerState)[keyof typeof PowerState];
export const POWER_TARGETS: readonly PowerState[] = Object.values(PowerState);
