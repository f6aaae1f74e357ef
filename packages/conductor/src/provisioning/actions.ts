import {
  type InspectionData,
  InvalidParameterValue,
  PowerState,
  type ProvisionState,
  ProvisionState as S,
} from '@bmaas/common';
import { type ProvisionStep, rescueStepsOf } from '@bmaas/driver-api';
import { withoutAgentSession } from '../agent/agent-token.js';
import type { ConductorTask } from '../task-manager.js';
import { cacheHardwareSettings, type HardwareCache, isOutOfBandStep, outOfBandStep } from './out-of-band.js';
import { continueService, service } from './servicing.js';
import {
  CLEAN_STEPS,
  cleanStepsChosen,
  continueSteps,
  DEPLOY_STEPS,
  mergeDeploySteps,
  requestedCleanSteps,
  runSteps,
  stepRecord,
  stepText,
  USER_DEPLOY_STEPS_KEY,
  userDeployStepsOf,
  withoutSteps,
} from './steps.js';
import { advance } from './transitions.js';

/** driver_internal_info key: this manual cleaning runs without booting the ramdisk (1.70), as Ironic names it. */
export const CLEANING_DISABLE_RAMDISK_KEY = 'cleaning_disable_ramdisk';

export interface ActionContext {
  /** [conductor]automated_clean; a node's own automated_clean overrides it. */
  automatedClean: boolean;
  now(): Date;
  /** Processes an inventory read out of band as an agent's (properties, ports, stored inventory, rules). */
  processInventory(task: ConductorTask, data: InspectionData): Promise<void>;
  /** Where BIOS settings and firmware components reported by the interfaces are cached. */
  hardwareCache: HardwareCache;
}

/** Background work of an action, run under the exclusive lock after the RPC answered. */
export type ActionWork = (task: ConductorTask, ctx: ActionContext) => Promise<void>;

/** enroll -> verifying: the power credentials work. */
async function verify(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.driver.power.validate(task);
  const powerState = await task.driver.power.getPowerState(task);
  await cacheHardwareSettings(task, ctx.hardwareCache);
  await advance(task, 'done', ctx.now, { powerState });
}

/** Cleaning done: back to manageable for a manual clean, else available. */
export async function finishCleaning(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const { [CLEANING_DISABLE_RAMDISK_KEY]: _, ...rest } = withoutSteps(task.node.driverInternalInfo, CLEAN_STEPS);
  const info = withoutAgentSession(rest);
  if (task.node.targetProvisionState === S.MANAGEABLE || task.node.retired) {
    // Manual cleaning ends where it started, and a retired node is not made available again
    // (Ironic fires its internal `manage` event here).
    await task.updateNode({
      provisionState: S.MANAGEABLE,
      targetProvisionState: null,
      provisionUpdatedAt: ctx.now(),
      cleanStep: {},
      driverInternalInfo: info,
    });
  } else {
    await advance(task, 'done', ctx.now, { cleanStep: {}, driverInternalInfo: info });
  }
}

/** The last clean step finished: the agent is powered off and its boot removed, then cleaning ends. */
async function endCleaning(task: ConductorTask, ctx: ActionContext): Promise<void> {
  if (!withoutRamdisk(task)) await task.driver.deploy.tearDownCleaning(task);
  await finishCleaning(task, ctx);
}

/** Chooses the clean steps (the agent is up, or none is needed) and runs them from the first. */
async function startCleanSteps(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const manual = task.node.targetProvisionState === S.MANAGEABLE;
  const requested = manual ? requestedCleanSteps(task.node.driverInternalInfo) : undefined;
  // Steps of interfaces that run them themselves keep their place; the agent completes the others.
  const agentSteps = await task.driver.deploy.getCleanSteps(
    task,
    requested?.filter((step) => !isOutOfBandStep(task, step)),
  );
  const steps = requested
    ? requested.map((step) =>
        isOutOfBandStep(task, step) ? outOfBandStep(task, step) : (agentSteps.shift() as ProvisionStep),
      )
    : agentSteps;
  task.logger.info('clean steps chosen', { steps: steps.map((s) => `${s.interface}.${s.step}`) });
  if ((await runSteps(task, ctx, CLEAN_STEPS, steps, 0)) === 'done') await endCleaning(task, ctx);
}

function withoutRamdisk(task: ConductorTask): boolean {
  return task.node.driverInternalInfo[CLEANING_DISABLE_RAMDISK_KEY] === true;
}

/**
 * Manual cleaning with disable_ramdisk: no ramdisk boots, and only steps the
 * interface runs without it are taken (Ironic: "requires booting a ramdisk").
 */
async function startCleanStepsWithoutRamdisk(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const requested = requestedCleanSteps(task.node.driverInternalInfo) ?? [];
  const { deploy } = task.driver;
  const steps = (
    deploy.getCleanStepsWithoutRamdisk ? await deploy.getCleanStepsWithoutRamdisk(task, requested) : requested
  ).map((step) => (isOutOfBandStep(task, step) ? outOfBandStep(task, step) : step));
  const needing = steps.filter((step) => step.requires_ramdisk !== false);
  if (needing.length > 0) {
    throw new InvalidParameterValue(
      needing.map((step) => `clean step ${stepText(step)} requires booting a ramdisk`).join('; '),
    );
  }
  task.logger.info('clean steps chosen, no ramdisk', { steps: steps.map((s) => `${s.interface}.${s.step}`) });
  if ((await runSteps(task, ctx, CLEAN_STEPS, steps, 0)) === 'done') await endCleaning(task, ctx);
}

/** cleaning (provide, manual clean, or after undeploy). */
async function clean(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const manual = task.node.targetProvisionState === S.MANAGEABLE;
  if (!manual && !(task.node.automatedClean ?? ctx.automatedClean)) {
    await finishCleaning(task, ctx);
    return;
  }
  await task.driver.power.validate(task);
  if (manual && withoutRamdisk(task)) {
    await startCleanStepsWithoutRamdisk(task, ctx);
    return;
  }
  if ((await task.driver.deploy.prepareCleaning(task)) === 'wait') {
    await advance(task, 'wait', ctx.now, { cleanStep: {} });
    return;
  }
  await startCleanSteps(task, ctx);
}

/** The last deploy step finished: the agent's session ends with it. */
async function finishDeploy(task: ConductorTask, ctx: ActionContext): Promise<void> {
  const { [USER_DEPLOY_STEPS_KEY]: _, ...info } = task.node.driverInternalInfo;
  await advance(task, 'done', ctx.now, { driverInternalInfo: withoutAgentSession(info) });
}

/** The deploy steps to run: the interface's, merged with those the user gave (1.69), highest priority first. */
async function chooseDeploySteps(task: ConductorTask): Promise<ProvisionStep[]> {
  const userSteps = userDeployStepsOf(task.node.driverInternalInfo[USER_DEPLOY_STEPS_KEY]);
  const steps = mergeDeploySteps(await task.driver.deploy.getDeploySteps(task), userSteps);
  task.logger.debug('deploy steps chosen', { steps: steps.map((s) => `${s.interface}.${s.step}`) });
  return steps;
}

/** deploying (deploy, rebuild) when its steps were not chosen as the action was accepted. */
async function deploy(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await runDeploySteps(task, ctx, await chooseDeploySteps(task), false);
}

async function runDeploySteps(
  task: ConductorTask,
  ctx: ActionContext,
  steps: readonly ProvisionStep[],
  startRecorded: boolean,
): Promise<void> {
  if ((await runSteps(task, ctx, DEPLOY_STEPS, steps, 0, { startRecorded })) === 'done') await finishDeploy(task, ctx);
}

/**
 * deploying, prepared when the action is accepted: the steps are chosen
 * then, and the first is recorded as running in the statement that moves
 * the node into deploying (one statement less per deploy start). Steps that
 * cannot be chosen now are chosen again by the background work, which fails
 * the deploy as before.
 */
async function prepareDeploy(task: ConductorTask): Promise<ActionWork> {
  let steps: ProvisionStep[];
  try {
    steps = await chooseDeploySteps(task);
  } catch {
    return deploy;
  }
  const recorded = steps.length > 0;
  if (recorded) task.writeWithNext(stepRecord(task.node, DEPLOY_STEPS, steps, 0));
  return (t, ctx) => runDeploySteps(t, ctx, steps, recorded);
}

/** deleting: tear the instance down, then clean on the way to available. */
async function undeploy(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.driver.deploy.tearDown(task);
  await advance(task, 'clean', ctx.now, { instanceInfo: {}, instanceUuid: null, instanceName: null });
  await clean(task, ctx);
}

/** inspecting: the inspect interface finishes at once or boots a ramdisk and waits for its inventory. */
async function inspect(task: ConductorTask, ctx: ActionContext): Promise<void> {
  await task.updateNode({ inspectionStartedAt: ctx.now(), inspectionFinishedAt: null });
  const outcome = await task.driver.inspect.inspectHardware(task);
  if (outcome === 'wait') {
    await advance(task, 'wait', ctx.now);
    return;
  }
  // Out of band: the interface read the inventory from the BMC.
  if (outcome !== 'done') await ctx.processInventory(task, outcome);
  await advance(task, 'done', ctx.now, { inspectionFinishedAt: ctx.now() });
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
  await advance(task, outcome, ctx.now);
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
  [S.SERVICING]: (task, ctx) => service(task, ctx),
};

/**
 * Work whose first write goes with the transition that starts it: run under
 * the lock when the action is accepted, with the transition applied to
 * `task.node` but not yet written (Task.writeWithNext). It records its first
 * write the same way and returns the work to run in the background.
 */
export type PreparedWork = (task: ConductorTask, ctx: ActionContext) => Promise<ActionWork>;

/** The states whose work is prepared so (WORK_BY_STATE runs the others). */
export const PREPARED_WORK_BY_STATE: Readonly<Partial<Record<ProvisionState, PreparedWork>>> = {
  [S.DEPLOYING]: prepareDeploy,
};

/**
 * Undoes what a wait prepared, after an abort, a timed-out wait or a failed
 * step moved the node to its failed state. Best effort: the node is failed
 * either way. A failed deploy ends powered off, as with Ironic's
 * [deploy]power_off_after_deploy_failure.
 */
export async function tearDownWait(task: ConductorTask, waitState: string): Promise<void> {
  const { driver } = task;
  if (waitState === S.CLEAN_WAIT || waitState === S.CLEANING) {
    await driver.deploy.tearDownCleaning(task);
  } else if (waitState === S.INSPECT_WAIT) {
    await driver.inspect.abortInspection(task);
  } else if (waitState === S.DEPLOY_WAIT || waitState === S.DEPLOYING || waitState === S.RESCUE_WAIT) {
    await driver.power.setPowerState(task, PowerState.OFF);
    await driver.boot.cleanUpRamdisk(task);
  }
}

/** The agent heartbeated in a wait state: see whether the step that waited finished, and go on. */
export const CONTINUE_BY_WAIT: Readonly<Partial<Record<ProvisionState, ActionWork>>> = {
  [S.DEPLOY_WAIT]: async (task, ctx) => {
    if ((await continueSteps(task, ctx, DEPLOY_STEPS)) === 'done') await finishDeploy(task, ctx);
  },
  [S.CLEAN_WAIT]: async (task, ctx) => {
    if (!cleanStepsChosen(task.node.driverInternalInfo)) {
      // First heartbeat of cleaning: the agent is up and can tell its steps.
      await advance(task, 'resume', ctx.now);
      await startCleanSteps(task, ctx);
      return;
    }
    if ((await continueSteps(task, ctx, CLEAN_STEPS)) === 'done') await endCleaning(task, ctx);
  },
  [S.RESCUE_WAIT]: async (task, ctx) => {
    await advance(task, 'resume', ctx.now);
    await rescueStepsOf(task.driver.deploy)?.finishRescue(task);
    // the rescue agent stopped serving its API: its session ends here
    await advance(task, 'done', ctx.now, { driverInternalInfo: withoutAgentSession(task.node.driverInternalInfo) });
  },
  [S.SERVICE_WAIT]: (task, ctx) => continueService(task, ctx),
};
