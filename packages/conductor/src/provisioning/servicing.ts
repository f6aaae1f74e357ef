import { InvalidParameterValue, PowerState, ProvisionState as S } from '@bmaas/common';
import type { UserStep } from '@bmaas/driver-api';
import type { ConductorTask } from '../task-manager.js';
import type { ActionContext } from './actions.js';
import { executeOutOfBandStep, isOutOfBandStep } from './out-of-band.js';
import { advance } from './transitions.js';

/** driver_internal_info keys of a service, as Ironic names them. */
export const SERVICE_STEPS_KEY = 'service_steps';
const STEP_INDEX_KEY = 'service_step_index';
/** The step running (or held, or waited for), shown as the node's service_step. */
export const SERVICE_STEP_KEY = 'service_step';
/** A service asked with disable_ramdisk (1.108): no step that needs the ramdisk may run. */
export const SERVICE_DISABLE_RAMDISK_KEY = 'service_disable_ramdisk';

/** Flow steps the conductor resolves itself (Ironic's, but `wait`), whatever the interface named. */
const POWER_STEPS: Readonly<Record<string, PowerState>> = {
  power_on: PowerState.ON,
  power_off: PowerState.OFF,
  reboot: PowerState.REBOOT,
};
const HOLD_STEP = 'hold';

function stepsOf(task: ConductorTask): UserStep[] {
  const steps = task.node.driverInternalInfo[SERVICE_STEPS_KEY];
  return Array.isArray(steps) ? (steps as UserStep[]) : [];
}

/** driver_internal_info without what a service keeps in it. */
export function withoutServiceInfo(info: Record<string, unknown>): Record<string, unknown> {
  const {
    [SERVICE_STEPS_KEY]: _s,
    [STEP_INDEX_KEY]: _i,
    [SERVICE_STEP_KEY]: _c,
    [SERVICE_DISABLE_RAMDISK_KEY]: _d,
    ...rest
  } = info;
  return rest;
}

/**
 * Refuses, before any step runs, a step neither the conductor, an interface
 * running it out of band (bios.apply_configuration, …) nor the deploy
 * interface runs, and with disable_ramdisk one of the deploy interface: it
 * runs its steps through the agent, in the ramdisk.
 */
function checkSupported(task: ConductorTask, steps: readonly UserStep[]): void {
  const withoutRamdisk = task.node.driverInternalInfo[SERVICE_DISABLE_RAMDISK_KEY] === true;
  for (const step of steps) {
    const flow = step.step === HOLD_STEP || step.step in POWER_STEPS || isOutOfBandStep(task, step);
    if (!flow && withoutRamdisk) {
      throw new InvalidParameterValue(`service step ${step.interface}.${step.step} requires booting a ramdisk`);
    }
    if (!flow && !task.driver.deploy.executeServiceStep) {
      throw new InvalidParameterValue(`node does not support this service step: ${step.interface}.${step.step}`);
    }
  }
}

/**
 * Runs the service steps from the recorded index on: a flow step or the
 * deploy interface's executeServiceStep for each. `hold` parks the node in
 * `service hold` (unhold goes on with the next step), a step answering
 * 'wait' in `service wait`; after the last one the node is active again.
 * A failure clears the current step and ends in `service failed`.
 */
async function runSteps(task: ConductorTask, ctx: ServiceContext): Promise<void> {
  const { now } = ctx;
  const steps = stepsOf(task);
  const start = Number(task.node.driverInternalInfo[STEP_INDEX_KEY] ?? 0);
  try {
    for (let index = start; index < steps.length; index++) {
      const step = steps[index] as UserStep;
      const next = { ...task.node.driverInternalInfo, [SERVICE_STEP_KEY]: step, [STEP_INDEX_KEY]: index + 1 };
      if (step.step === HOLD_STEP) {
        await advance(task, 'hold', now, { driverInternalInfo: next });
        return;
      }
      await task.updateNode({ driverInternalInfo: next });
      const power = POWER_STEPS[step.step];
      if (power) {
        await task.driver.power.setPowerState(task, power);
      } else if (isOutOfBandStep(task, step)) {
        await executeOutOfBandStep(task, step, ctx.hardwareCache);
      } else if ((await task.driver.deploy.executeServiceStep?.(task, step)) === 'wait') {
        await advance(task, 'wait', now);
        return;
      }
    }
  } catch (error) {
    await task.updateNode({ driverInternalInfo: withoutServiceInfo(task.node.driverInternalInfo) });
    throw error;
  }
  await advance(task, 'done', now, { driverInternalInfo: withoutServiceInfo(task.node.driverInternalInfo) });
}

/** servicing: check every step is supported, then run them from the first. */
/** What a service needs of the action context. */
type ServiceContext = Pick<ActionContext, 'now' | 'hardwareCache'>;

export async function service(task: ConductorTask, ctx: ServiceContext): Promise<void> {
  await task.driver.power.validate(task);
  try {
    checkSupported(task, stepsOf(task));
  } catch (error) {
    await task.updateNode({ driverInternalInfo: withoutServiceInfo(task.node.driverInternalInfo) });
    throw error;
  }
  await runSteps(task, ctx);
}

/** After an unhold (`service wait`) or the agent's call back (`servicing`): go on with the next step. */
export async function continueService(task: ConductorTask, ctx: ServiceContext): Promise<void> {
  if (task.node.provisionState === S.SERVICE_WAIT) await advance(task, 'resume', ctx.now);
  await runSteps(task, ctx);
}

/**
 * An aborted service (from `service wait`, `service hold` or `service
 * failed`): the node, now in `service failed` or already active, is active
 * again with nothing of the service left; the instance is untouched.
 */
export async function abortService(task: ConductorTask, now: () => Date): Promise<void> {
  const info = withoutServiceInfo(task.node.driverInternalInfo);
  if (task.node.provisionState === S.SERVICE_FAILED) await advance(task, 'abort', now, { driverInternalInfo: info });
  else await task.updateNode({ driverInternalInfo: info });
}
