import { PowerState, type ProvisionState, ProvisionState as S } from '@bmaas/common';
import type { StepOutcome } from '@bmaas/driver-api';
import { rescueStepsOf } from '../deploy/rescue-steps.js';
import type { ConductorTask } from '../task-manager.js';
import { advance } from './transitions.js';

export interface ActionContext {
  /** [conductor]automated_clean; a node's own automated_clean overrides it. */
  automatedClean: boolean;
  now(): Date;
}

/** Background work of an action, run under the exclusive lock after the RPC answered. */
export type ActionWork = (task: ConductorTask, ctx: ActionContext) => Promise<void>;

/** 'wait' parks the node in the matching wait state; 'done' finishes with `finish`. */
async function afterStep(
  task: ConductorTask,
  ctx: ActionContext,
  outcome: StepOutcome,
  finish: () => Promise<void>,
): Promise<void> {
  if (outcome === 'wait') await advance(task, 'wait', ctx.now);
  else await finish();
}

/** enroll -> verifying: the power credentials work. */
async function verify(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.driver.power.validate(task);
  const powerState = await task.driver.power.getPowerState(task);
  await advance(task, 'done', ctx.now, { powerState });
}

/** Cleaning done: back to manageable for a manual clean, else available. */
export async function finishCleaning(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const { clean_steps: _, ...info } = task.node.driverInternalInfo;
  if (task.node.targetProvisionState === S.MANAGEABLE) {
    // Manual cleaning ends where it started (Ironic fires its internal `manage` event here).
    await task.updateNode({
      provisionState: S.MANAGEABLE,
      targetProvisionState: null,
      provisionUpdatedAt: ctx.now(),
      driverInternalInfo: info,
    });
  } else {
    await advance(task, 'done', ctx.now, { driverInternalInfo: info });
  }
}

/** cleaning (provide, manual clean, or after undeploy). */
async function clean(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const manual = task.node.targetProvisionState === S.MANAGEABLE;
  if (!manual && !(task.node.automatedClean ?? ctx.automatedClean)) {
    await finishCleaning(task, ctx);
    return;
  }
  await task.driver.power.validate(task);
  await task.driver.deploy.validate(task);
  const outcome = await task.driver.deploy.prepareCleaning(task);
  await afterStep(task, ctx, outcome, () => finishCleaning(task, ctx));
}

/** deploying (deploy, rebuild). */
async function deploy(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const outcome = await task.driver.deploy.deploy(task);
  await afterStep(task, ctx, outcome, () => advance(task, 'done', ctx.now));
}

/** deleting: tear the instance down, then clean on the way to available. */
async function undeploy(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.driver.deploy.tearDown(task);
  await advance(task, 'clean', ctx.now, { instanceInfo: {}, instanceUuid: null });
  await clean(task, ctx);
}

/** inspecting: the inspect interface finishes at once or boots a ramdisk and waits for its inventory. */
async function inspect(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.updateNode({ inspectionStartedAt: ctx.now(), inspectionFinishedAt: null });
  const outcome = await task.driver.inspect.inspectHardware(task);
  await afterStep(task, ctx, outcome, () => advance(task, 'done', ctx.now, { inspectionFinishedAt: ctx.now() }));
}

/** adopting: take a running node as it is; its boot files are written as for a takeover. */
async function adopt(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.driver.boot.validate(task);
  await task.driver.deploy.validate(task);
  await task.driver.deploy.takeOver(task);
  await advance(task, 'done', ctx.now);
}

async function rescue(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const steps = rescueStepsOf(task.driver.deploy);
  const outcome = steps ? await steps.rescue(task) : 'done';
  await afterStep(task, ctx, outcome, () => advance(task, 'done', ctx.now));
}

async function unrescue(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await rescueStepsOf(task.driver.deploy)?.unrescue(task);
  const { rescue_password: _, ...instanceInfo } = task.node.instanceInfo;
  await advance(task, 'done', ctx.now, { instanceInfo });
}

/** What runs after the node entered each transient state. */
export const WORK_BY_STATE: Readonly<Partial<Record<ProvisionState, ActionWork>>> = {
  [S.VERIFYING]: verify,
  [S.CLEANING]: clean,
  [S.DEPLOYING]: deploy,
  [S.DELETING]: undeploy,
  [S.INSPECTING]: inspect,
  [S.ADOPTING]: adopt,
  [S.RESCUING]: rescue,
  [S.UNRESCUING]: unrescue,
};

/**
 * Undoes what a wait prepared, after an abort or a timed-out wait moved the
 * node to its failed state. Best effort: the node is failed either way.
 */
export async function tearDownWait(task: ConductorTask, waitState: string): Promise<void> {
  const { driver } = task;
  if (waitState === S.CLEAN_WAIT) {
    await driver.deploy.tearDownCleaning(task);
  } else if (waitState === S.INSPECT_WAIT) {
    await driver.inspect.abortInspection(task);
  } else if (waitState === S.DEPLOY_WAIT || waitState === S.RESCUE_WAIT) {
    await driver.power.setPowerState(task, PowerState.OFF);
    await driver.boot.cleanUpRamdisk(task);
  }
}

/** The agent called back in a wait state: resume the step that waited. */
export const CONTINUE_BY_WAIT: Readonly<Partial<Record<ProvisionState, ActionWork>>> = {
  [S.DEPLOY_WAIT]: async (task, ctx) => {
    const outcome = await task.driver.deploy.continueDeploy(task);
    await afterStep(task, ctx, outcome, () => advance(task, 'done', ctx.now));
  },
  [S.CLEAN_WAIT]: async (task, ctx) => {
    const outcome = await task.driver.deploy.continueCleaning(task);
    await afterStep(task, ctx, outcome, () => finishCleaning(task, ctx));
  },
  [S.RESCUE_WAIT]: async (task, ctx) => {
    await rescueStepsOf(task.driver.deploy)?.finishRescue(task);
    await advance(task, 'done', ctx.now);
  },
};
