import { AgentInProgress } from '@bmaas/agent-client';
import type { JsonObject } from '@bmaas/common';
import type { ProvisionStep, StepOutcome } from '@bmaas/driver-api';
import type { ConductorTask } from '../task-manager.js';
import type { ActionContext } from './actions.js';
import { advance } from './transitions.js';

/** Deploy or clean: where each keeps its steps, as Ironic names them. */
export interface StepKind {
  /** Node field showing the running step. */
  field: 'deployStep' | 'cleanStep';
  /** driver_internal_info keys: the step list, the running index, "re-run the current step". */
  listKey: string;
  indexKey: string;
  retryKey: string;
  execute(task: ConductorTask, step: ProvisionStep): Promise<StepOutcome>;
  check(task: ConductorTask, step: ProvisionStep): Promise<StepOutcome>;
}

export const DEPLOY_STEPS: StepKind = {
  field: 'deployStep',
  listKey: 'deploy_steps',
  indexKey: 'deploy_step_index',
  retryKey: 'retry_current_deploy_step',
  execute: (task, step) => task.driver.deploy.executeDeployStep(task, step),
  check: (task, step) => task.driver.deploy.checkDeployStep(task, step),
};

export const CLEAN_STEPS: StepKind = {
  field: 'cleanStep',
  listKey: 'clean_steps',
  indexKey: 'clean_step_index',
  retryKey: 'retry_current_clean_step',
  execute: (task, step) => task.driver.deploy.executeCleanStep(task, step),
  check: (task, step) => task.driver.deploy.checkCleanStep(task, step),
};

function stepsOf(info: JsonObject, kind: StepKind): ProvisionStep[] {
  const list = info[kind.listKey];
  return Array.isArray(list) ? (list as ProvisionStep[]) : [];
}

/** driver_internal_info without the step bookkeeping of `kind`. */
export function withoutSteps(info: JsonObject, kind: StepKind): JsonObject {
  const drop = new Set([kind.listKey, kind.indexKey, kind.retryKey]);
  return Object.fromEntries(Object.entries(info).filter(([key]) => !drop.has(key)));
}

/**
 * Runs `steps` from `start` in order, recording each in the node's
 * deploy_step / clean_step while it runs. A step answering 'wait' parks the
 * node in the wait state with that step recorded; an agent that is busy
 * parks it too, and the step is sent again at the next heartbeat. Returns
 * 'done' after the last step, with the bookkeeping cleared.
 */
export async function runSteps(
  task: ConductorTask,
  ctx: ActionContext,
  kind: StepKind,
  steps: readonly ProvisionStep[],
  start: number,
): Promise<StepOutcome> {
  for (let index = start; index < steps.length; index++) {
    const step = steps[index] as ProvisionStep;
    await task.updateNode({
      [kind.field]: step,
      driverInternalInfo: {
        ...withoutSteps(task.node.driverInternalInfo, kind),
        [kind.listKey]: steps,
        [kind.indexKey]: index,
      },
    });
    task.logger.info('step started', { step: `${step.interface}.${step.step}`, index });
    let outcome: StepOutcome;
    try {
      outcome = await kind.execute(task, step);
    } catch (error) {
      if (!(error instanceof AgentInProgress)) throw error;
      task.logger.info('agent busy, step sent again at the next heartbeat', { step: step.step });
      await advance(task, 'wait', ctx.now, {
        driverInternalInfo: { ...task.node.driverInternalInfo, [kind.retryKey]: true },
      });
      return 'wait';
    }
    if (outcome === 'wait') {
      await advance(task, 'wait', ctx.now);
      return 'wait';
    }
  }
  await task.updateNode({ [kind.field]: {}, driverInternalInfo: withoutSteps(task.node.driverInternalInfo, kind) });
  return 'done';
}

/**
 * A heartbeat arrived while the node waits in a step: asks the interface
 * whether that step finished. Still running: the node stays waiting
 * (undefined). Finished (or to be sent again): the node resumes (deploying,
 * cleaning) and the remaining steps run; their outcome is returned.
 */
export async function continueSteps(
  task: ConductorTask,
  ctx: ActionContext,
  kind: StepKind,
): Promise<StepOutcome | undefined> {
  const info = task.node.driverInternalInfo;
  const steps = stepsOf(info, kind);
  const index = typeof info[kind.indexKey] === 'number' ? (info[kind.indexKey] as number) : 0;
  const step = steps[index];
  if (!step) throw new Error(`no ${kind.listKey} recorded for the step the node waits in`);
  const again = info[kind.retryKey] === true;
  if (!again) {
    try {
      if ((await kind.check(task, step)) === 'wait') return undefined;
    } catch (error) {
      // The agent is busy with something else: ask again at its next heartbeat.
      if (error instanceof AgentInProgress) return undefined;
      throw error;
    }
  }
  await advance(task, 'resume', ctx.now);
  return runSteps(task, ctx, kind, steps, again ? index : index + 1);
}

/** Whether clean steps were chosen already (false at the first heartbeat of cleaning). */
export function cleanStepsChosen(info: JsonObject): boolean {
  return typeof info[CLEAN_STEPS.indexKey] === 'number';
}

/** The steps a manual clean asked for (driver_internal_info.clean_steps before any was chosen). */
export function requestedCleanSteps(info: JsonObject): ProvisionStep[] | undefined {
  const list = stepsOf(info, CLEAN_STEPS);
  return list.length > 0 ? list : undefined;
}
