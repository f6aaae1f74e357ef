import { AgentInProgress } from '@bmaas/agent-client';
import { InvalidParameterValue, type JsonObject, type NodeRecord } from '@bmaas/common';
import type { NodeChanges } from '@bmaas/db';

import type { ProvisionStep, StepOutcome } from '@bmaas/driver-api';
import type { ConductorTask } from '../task-manager.js';
import type { ActionContext } from './actions.js';
import { executeOutOfBandStep, isOutOfBandStep } from './out-of-band.js';
import { advance } from './transitions.js';

/** Deploy or clean: where each keeps its steps, as Ironic names them. */
export interface StepKind {
  /** Node field showing the running step. */
  field: 'deployStep' | 'cleanStep';
  /** driver_internal_info keys: the step list, the running index, "re-run the current step". */
  listKey: string;
  indexKey: string;
  retryKey: string;
  execute(task: ConductorTask, step: ProvisionStep, ctx: ActionContext): Promise<StepOutcome>;
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
  // A step of an interface that runs it itself (bios.apply_configuration, …) goes to that interface.
  execute: (task, step, ctx) =>
    isOutOfBandStep(task, step)
      ? executeOutOfBandStep(task, step, ctx.hardwareCache)
      : task.driver.deploy.executeCleanStep(task, step),
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

/** The changes recording `steps[index]` as the running step of `kind`. */
export function stepRecord(
  node: Pick<NodeRecord, 'driverInternalInfo'>,
  kind: StepKind,
  steps: readonly ProvisionStep[],
  index: number,
): NodeChanges {
  return {
    [kind.field]: steps[index] as ProvisionStep,
    driverInternalInfo: {
      ...withoutSteps(node.driverInternalInfo, kind),
      [kind.listKey]: steps,
      [kind.indexKey]: index,
    },
  };
}

/**
 * Runs `steps` from `start` in order, recording each in the node's
 * deploy_step / clean_step while it runs (`startRecorded`: the caller
 * already recorded the first, with the write that started the work). A step
 * answering 'wait' parks the node in the wait state with that step recorded;
 * an agent that is busy parks it too, and the step is sent again at the
 * next heartbeat. Returns 'done' after the last step, with the bookkeeping
 * cleared.
 */
export async function runSteps(
  task: ConductorTask,
  ctx: ActionContext,
  kind: StepKind,
  steps: readonly ProvisionStep[],
  start: number,
  options: { startRecorded?: boolean } = {},
): Promise<StepOutcome> {
  for (let index = start; index < steps.length; index++) {
    const step = steps[index] as ProvisionStep;
    if (!(options.startRecorded && index === start)) await task.updateNode(stepRecord(task.node, kind, steps, index));
    task.logger.info('step started', { step: `${step.interface}.${step.step}`, index });
    let outcome: StepOutcome;
    try {
      outcome = await kind.execute(task, step, ctx);
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

/** driver_internal_info key of the deploy steps a user gave with active/rebuild (1.69), as Ironic names it. */
export const USER_DEPLOY_STEPS_KEY = 'user_deploy_steps';

/** Order of interfaces whose deploy steps share a priority (Ironic's DEPLOYING_INTERFACE_PRIORITY). */
const DEPLOY_INTERFACE_ORDER: Readonly<Record<string, number>> = {
  vendor: 7,
  power: 6,
  management: 5,
  firmware: 4,
  deploy: 3,
  bios: 2,
  raid: 1,
};

/** A step as Python prints its dictionary, the form Ironic's step messages show. */
export function stepText(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  if (Array.isArray(value)) return `[${value.map(stepText).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `'${k}': ${stepText(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}

const stepId = (step: { interface: string; step: string }) => `${step.interface}.${step.step}`;

/** The user's deploy steps as the API checked them (priority a number or a string of digits). */
export function userDeployStepsOf(raw: unknown): ProvisionStep[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item) => {
    const step = item as { interface: string; step: string; priority: unknown; args?: JsonObject };
    return { interface: step.interface, step: step.step, priority: Number(step.priority), args: step.args ?? {} };
  });
}

/**
 * The deploy steps to run (Ironic's _get_all_deployment_steps): the
 * driver's steps of priority above 0, where a user step of the same
 * interface.step replaces it (its priority and args; priority 0 disables
 * it), highest priority first. A user step the interface does not have, the
 * core step given a priority, or a step given twice is refused.
 */
export function mergeDeploySteps(
  driverSteps: readonly ProvisionStep[],
  userSteps: readonly ProvisionStep[],
): ProvisionStep[] {
  const known = new Map(driverSteps.map((step) => [stepId(step), step]));
  const errors: string[] = [];
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const step of userSteps) {
    const id = stepId(step);
    if (seen.has(id)) duplicates.add(id);
    seen.add(id);
    if (!known.has(id)) {
      errors.push(`node does not support this deploy step: ${stepText(step)}`);
    } else if (step.priority > 0 && id === 'deploy.deploy') {
      errors.push(
        `deploy step ${step.step} on interface ${step.interface} is a core step and cannot be overridden by user steps. It may be disabled by setting the priority to 0`,
      );
    }
  }
  if (duplicates.size > 0) {
    errors.push(
      `Duplicate deploy steps. A deploy template cannot have multiple deploy steps with the same interface and step. Duplicate deploy steps for ${[...duplicates].join(', ')}`,
    );
  }
  if (errors.length > 0) {
    throw new InvalidParameterValue(
      `Validation of deploy steps from "deploy steps" argument failed.${errors.join('; ')}`,
    );
  }
  const steps = [
    ...driverSteps.filter((step) => step.priority > 0 && !seen.has(stepId(step))),
    ...userSteps.filter((step) => step.priority > 0).map((step) => ({ ...known.get(stepId(step)), ...step })),
  ];
  return steps
    .map((step, index) => ({ step, index }))
    .sort(
      (a, b) =>
        b.step.priority - a.step.priority ||
        (DEPLOY_INTERFACE_ORDER[b.step.interface] ?? 0) - (DEPLOY_INTERFACE_ORDER[a.step.interface] ?? 0) ||
        a.index - b.index,
    )
    .map(({ step }) => step);
}
