import { AGENT_URL_KEY, AGENT_VERIFY_CA_KEY } from '@bmaas/agent-client';
import {
  findTransition,
  type InspectionData,
  InvalidParameterValue,
  InvalidStateRequested,
  isBmaasError,
  MissingParameterValue,
  NodeIsRetired,
  NodeProtected,
  type NodeRecord,
  POWER_TARGETS,
  PowerState,
  ProvisionState as S,
  USER_EVENTS,
  WAIT_TIMEOUT_FAILURE,
} from '@bmaas/common';
import type { NodeChanges } from '@bmaas/db';
import { AGENT_TOKEN_KEY, agentTokenMatches, withoutAgentSession } from '../agent/agent-token.js';
import type { InventoryProcessor } from '../inspection/inventory-processor.js';
import type { ConductorTask, TaskManager } from '../task-manager.js';
import {
  type ActionContext,
  type ActionWork,
  CLEANING_DISABLE_RAMDISK_KEY,
  CONTINUE_BY_WAIT,
  PREPARED_WORK_BY_STATE,
  type PreparedWork,
  tearDownWait,
  WORK_BY_STATE,
} from './actions.js';
import type { HardwareCache } from './out-of-band.js';
import { abortService, continueService, SERVICE_DISABLE_RAMDISK_KEY, SERVICE_STEPS_KEY } from './servicing.js';
import { mergeDeploySteps, USER_DEPLOY_STEPS_KEY, userDeployStepsOf } from './steps.js';
import { advance, failAction } from './transitions.js';

export interface ProvisioningRunnerOptions {
  tasks: TaskManager;
  /** Processes the inventories inspection ramdisks post. */
  inventories: InventoryProcessor;
  /** [conductor]automated_clean. */
  automatedClean: boolean;
  /** Where BIOS settings and firmware components are cached (the hardware settings store). */
  hardwareCache: HardwareCache;
  /** [agent]require_tls: refuse agents that call back over plain HTTP. */
  requireTls?: boolean;
  now?: () => Date;
}

export interface ProvisioningRequest {
  requestId?: string | undefined;
  cleanSteps?: unknown[] | undefined;
  serviceSteps?: unknown[] | undefined;
  /** deploy/rebuild (1.69): steps merged with the deploy interface's ({interface, step, args, priority}). */
  deploySteps?: unknown[] | undefined;
  /** clean (1.70): run only steps that need no ramdisk, without booting it. */
  disableRamdisk?: boolean | undefined;
  rescuePassword?: string | undefined;
  /** deploy/rebuild: the config drive, stored as upstream in instance_info.configdrive. */
  configdrive?: string | Record<string, unknown> | undefined;
}

/** What an agent's heartbeat carries, as the API checked it. */
export interface HeartbeatRequest {
  requestId?: string | undefined;
  callbackUrl?: string | undefined;
  agentVersion?: string | undefined;
  agentToken?: string | undefined;
  /** PEM of the agent's self-signed certificate (auto-TLS). */
  agentVerifyCa?: string | undefined;
}

/** States in which a heartbeat only says the agent is alive (Ironic records it and does nothing). */
const AGENT_ALIVE_STATES: ReadonlySet<string> = new Set([S.DEPLOYING, S.CLEANING, S.RESCUING]);

/** Actions refused while the node is in maintenance (Ironic's NodeInMaintenance). */
const BLOCKED_IN_MAINTENANCE: ReadonlySet<string> = new Set(['deploy', 'rebuild', 'service']);

/** States whose abort ends a service: the node goes back to active (Ironic's do_node_service_abort). */
const SERVICE_ABORT_STATES: ReadonlySet<string> = new Set([S.SERVICE_WAIT, S.SERVICE_HOLD, S.SERVICE_FAILED]);

/** How each failed action is named in last_error. */
const ACTION_NAMES: Readonly<Record<string, string>> = {
  [S.VERIFYING]: 'verify',
  [S.CLEANING]: 'clean',
  [S.DEPLOYING]: 'deploy',
  [S.DEPLOY_WAIT]: 'deploy',
  [S.CLEAN_WAIT]: 'clean',
  [S.RESCUE_WAIT]: 'rescue',
  [S.DELETING]: 'tear down',
  [S.INSPECTING]: 'inspect',
  [S.ADOPTING]: 'adopt',
  [S.RESCUING]: 'rescue',
  [S.UNRESCUING]: 'unrescue',
  [S.SERVICING]: 'service',
};

/** The operation a wait belongs to, for messages. */
const WAIT_OPERATION: Readonly<Record<string, string>> = {
  [S.DEPLOY_WAIT]: 'deploy',
  [S.CLEAN_WAIT]: 'clean',
  [S.INSPECT_WAIT]: 'inspect',
  [S.RESCUE_WAIT]: 'rescue',
  [S.SERVICE_WAIT]: 'service',
  [S.SERVICE_HOLD]: 'service',
  [S.SERVICE_FAILED]: 'service',
};

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs the provision state machine on this conductor: checks the action on
 * the node as read and records the transition with the write that takes the
 * node's exclusive lock (checked again under a lock taken first when the node
 * changed meanwhile), answers, then does the work in the background under the
 * same lock. A failure ends the action in its failed state with last_error.
 */
export class ProvisioningRunner {
  private readonly ctx: ActionContext;

  constructor(private readonly options: ProvisioningRunnerOptions) {
    const now = options.now ?? (() => new Date());
    this.ctx = {
      automatedClean: options.automatedClean,
      now,
      processInventory: (task, data) => options.inventories.process(task, data),
      hardwareCache: options.hardwareCache,
    };
  }

  /** `do_provisioning_action`: fires a user event (deploy, delete, manage, provide, …). */
  async doProvisioningAction(nodeUuid: string, event: string, request: ProvisioningRequest = {}): Promise<void> {
    if (!USER_EVENTS.has(event as never)) {
      throw new InvalidParameterValue(`"${event}" is not a valid provision action.`, { event });
    }
    const extra = this.eventParameters(event, request);
    await this.options.tasks.withTask(
      nodeUuid,
      // The checks and choices below change nothing before the first write, which takes the lock.
      { purpose: `provision action ${event}`, requestId: request.requestId, lockWithFirstWrite: true },
      async (task) => {
        const { node } = task;
        const transition = findTransition(node.provisionState, event);
        if (!transition) {
          throw new InvalidStateRequested(
            `The requested action "${event}" can not be performed on node "${node.uuid}" while it is in state "${node.provisionState}".`,
            { node: node.uuid, action: event, state: node.provisionState },
          );
        }
        if (node.maintenance && BLOCKED_IN_MAINTENANCE.has(event)) {
          throw new InvalidStateRequested(
            `The requested action "${event}" can not be performed on node "${node.uuid}" while it is in maintenance mode.`,
            { node: node.uuid, action: event },
          );
        }
        if (event === 'abort' && node.provisionState === S.SERVICE_FAILED && node.maintenance) {
          throw new InvalidStateRequested(
            `Can not abort service on node "${node.uuid}" while it is in maintenance mode. Please remove the node from maintenance prior to issuing the request to abort the service operation.`,
            { node: node.uuid, action: event, state: node.provisionState },
          );
        }
        if (node.protected && (event === 'delete' || event === 'rebuild')) throw new NodeProtected(node.uuid);
        if (node.retired && event === 'provide') throw new NodeIsRetired('providing', node.uuid);
        await this.validateBefore(event, task, request.deploySteps);
        const eventChanges = extra(node);
        const changes: NodeChanges = {
          provisionState: transition.to,
          targetProvisionState: transition.target ?? null,
          provisionUpdatedAt: this.ctx.now(),
          lastError: null,
          ...eventChanges,
          // Whatever agent runs now is about to be rebooted or replaced: its token must not outlive it.
          driverInternalInfo: withoutAgentSession(eventChanges.driverInternalInfo ?? node.driverInternalInfo),
        };
        if (event === 'abort') {
          changes.lastError = `By request, the ${WAIT_OPERATION[node.provisionState] ?? 'current'} operation was aborted.`;
        }
        const from = node.provisionState;
        let { work, prepare } = this.workAfter(event, from, transition.to);
        if (prepare) {
          task.writeWithNext(changes);
          work = await prepare(task, this.ctx);
          // Writes what is pending: the transition and the work's first write, in one statement.
          await task.updateNode({});
        } else {
          await task.updateNode(changes);
        }
        task.logger.info('provision action accepted', { action: event, from, to: transition.to });
        const accepted = work;
        if (accepted) task.spawnAfter((t) => this.runWork(t, accepted));
      },
    );
  }

  /**
   * `heartbeat`: the node's agent is up. Checked at once, as upstream: the
   * token issued at lookup (constant time), TLS when [agent]require_tls, the
   * agent's certificate unchanged. Its URL, version and certificate are then
   * recorded. In a wait state the step that waited is checked (and the
   * action goes on) in the background; in a busy state (deploying,
   * cleaning, …) the agent is only known to be alive.
   */
  async heartbeat(nodeUuid: string, request: HeartbeatRequest = {}): Promise<void> {
    await this.options.tasks.withTask(
      nodeUuid,
      { purpose: 'agent heartbeat', requestId: request.requestId },
      async (task) => {
        const { node } = task;
        if (
          request.agentToken !== undefined &&
          !agentTokenMatches(node.driverInternalInfo[AGENT_TOKEN_KEY], request.agentToken)
        ) {
          task.logger.warn('heartbeat refused: invalid or missing agent token');
          throw new InvalidParameterValue('Invalid or missing agent token received.', { node: node.uuid });
        }
        const waitState = node.provisionState;
        const work = CONTINUE_BY_WAIT[waitState as S];
        if (!work && !AGENT_ALIVE_STATES.has(waitState)) {
          throw new InvalidStateRequested(
            `Node ${node.uuid} is not waiting for its agent (provision state "${waitState}").`,
            { node: node.uuid, state: waitState },
          );
        }
        if (this.options.requireTls && request.callbackUrl && !request.callbackUrl.startsWith('https://')) {
          task.logger.warn('heartbeat refused: agent does not use TLS', { callbackUrl: request.callbackUrl });
          throw new InvalidParameterValue(
            `TLS is required by the conductor, but the agent of node ${node.uuid} does not use it (callback_url ${request.callbackUrl}).`,
          );
        }
        const storedCa = node.driverInternalInfo[AGENT_VERIFY_CA_KEY];
        if (request.agentVerifyCa && typeof storedCa === 'string' && storedCa !== request.agentVerifyCa) {
          throw new InvalidParameterValue(`Detected change in the agent's TLS certificate of node ${node.uuid}.`);
        }
        const agent = {
          ...(request.callbackUrl ? { [AGENT_URL_KEY]: request.callbackUrl } : {}),
          ...(request.agentVersion ? { agent_version: request.agentVersion } : {}),
          ...(request.agentVerifyCa ? { [AGENT_VERIFY_CA_KEY]: request.agentVerifyCa } : {}),
          agent_last_heartbeat: this.ctx.now().toISOString(),
        };
        await task.updateNode({
          // a heartbeat in a wait state is progress: the callback timeout counts from it
          ...(work ? { provisionUpdatedAt: this.ctx.now() } : {}),
          driverInternalInfo: { ...node.driverInternalInfo, ...agent },
        });
        if (work) {
          task.logger.info('agent called back', { from: waitState });
          task.spawnAfter((t) => this.runWork(t, work));
        } else {
          task.logger.debug('agent alive', { state: waitState });
        }
      },
    );
  }

  /**
   * `continue_inspection`: the inspection ramdisk posted its inventory. In
   * `inspect wait`: inspecting, then in the background the inventory is
   * processed, the inspect interface tidies up (ramdisk boot, power off) and
   * the node becomes manageable. In `enroll` (a node discovery just created):
   * the inventory is processed, the node stays in enroll.
   */
  async continueInspection(
    nodeUuid: string,
    data: InspectionData,
    request: { requestId?: string | undefined } = {},
  ): Promise<void> {
    await this.options.tasks.withTask(
      nodeUuid,
      { purpose: 'continue inspection', requestId: request.requestId },
      async (task) => {
        const { node } = task;
        if (node.provisionState === S.ENROLL) {
          task.spawnAfter(async (t) => {
            try {
              await this.options.inventories.process(t, data);
            } catch (error) {
              t.logger.warn('discovered node: inventory not processed', { error: message(error) });
              await t.updateNode({
                lastError: `Failed to process the inventory of node ${t.node.uuid}: ${message(error)}`,
              });
            }
          });
          return;
        }
        if (node.provisionState !== S.INSPECT_WAIT) {
          throw new InvalidStateRequested(
            `Node ${node.uuid} is not waiting for an inspection inventory (provision state "${node.provisionState}").`,
            { node: node.uuid, state: node.provisionState },
          );
        }
        await task.updateNode({
          provisionState: S.INSPECTING,
          provisionUpdatedAt: this.ctx.now(),
          // The ramdisk is about to be powered off: its token must not outlive it.
          driverInternalInfo: withoutAgentSession(node.driverInternalInfo),
        });
        task.logger.info('inspection inventory received', { interfaces: data.inventory.interfaces.length });
        task.spawnAfter((t) =>
          this.runWork(t, async (t2, ctx) => {
            await this.options.inventories.process(t2, data);
            await t2.driver.inspect.continueInspection(t2);
            await advance(t2, 'done', ctx.now, { inspectionFinishedAt: ctx.now() });
          }),
        );
      },
    );
  }

  /** `change_node_power_state`: records the target, answers, then drives the power interface. */
  async changePowerState(
    nodeUuid: string,
    target: string,
    request: { requestId?: string | undefined; timeoutSeconds?: number | undefined } = {},
  ): Promise<void> {
    if (!(POWER_TARGETS as readonly string[]).includes(target)) {
      throw new InvalidParameterValue(`"${target}" is not a valid power state (${POWER_TARGETS.join(', ')}).`, {
        target,
      });
    }
    await this.options.tasks.withTask(
      nodeUuid,
      // Validation changes nothing: the first write takes the lock.
      { purpose: `power ${target}`, requestId: request.requestId, lockWithFirstWrite: true },
      async (task) => {
        await task.driver.power.validate(task);
        await task.updateNode({
          targetPowerState: target,
          lastError: null,
          // Powering off or rebooting ends the running agent: a new one gets a new token.
          ...(target === PowerState.ON
            ? {}
            : { driverInternalInfo: withoutAgentSession(task.node.driverInternalInfo) }),
        });
        task.spawnAfter(async (t) => {
          try {
            if (t.node.disablePowerOff && (target === PowerState.OFF || target === PowerState.SOFT_POWER_OFF)) {
              // Ironic's node_power_action: such a node is never powered off.
              throw new Error(`Refusing to power off node ${t.node.uuid} with disable_power_off flag set.`);
            }
            await t.driver.power.setPowerState(t, target as PowerState, request.timeoutSeconds);
            await t.updateNode({ targetPowerState: null });
          } catch (error) {
            t.logger.warn('power change failed', { target, error: message(error) });
            await t.updateNode({
              targetPowerState: null,
              lastError: `Failed to change power state to '${target}': ${message(error)}`,
            });
          }
        });
      },
    );
  }

  /**
   * Fails a node whose wait timed out (periodic task). Re-checks under the
   * lock that it is still in that wait and still late; false when it moved on.
   */
  async failTimedOutWait(nodeUuid: string, timeoutSeconds: (state: string) => number): Promise<boolean> {
    return this.options.tasks.withTask(nodeUuid, { purpose: 'wait timeout' }, async (task) => {
      const { node } = task;
      const limit = timeoutSeconds(node.provisionState);
      if (!(node.provisionState in WAIT_TIMEOUT_FAILURE) || limit <= 0 || !isLate(node, limit, this.ctx.now())) {
        return false;
      }
      const operation = WAIT_OPERATION[node.provisionState] ?? 'current';
      const lastError = `Timeout reached while waiting for callback for node ${node.uuid} (${operation}, ${limit} s).`;
      task.logger.warn('wait timed out', { state: node.provisionState, timeoutSeconds: limit });
      try {
        await tearDownWait(task, node.provisionState);
      } catch (error) {
        task.logger.warn('tear down after timeout failed', { error: message(error) });
      }
      await failAction(task, lastError, this.ctx.now);
      return true;
    });
  }

  /** Per-event parameters, checked before the lock is taken; returns the node changes they imply. */
  private eventParameters(event: string, request: ProvisioningRequest): (node: NodeRecord) => NodeChanges {
    if (event === 'clean') {
      const steps = request.cleanSteps;
      if (!Array.isArray(steps) || steps.length === 0) {
        throw new MissingParameterValue(
          'An explicit list of clean steps (clean_steps) is required for manual cleaning.',
        );
      }
      const disableRamdisk = request.disableRamdisk === true;
      return (node) => {
        const { [CLEANING_DISABLE_RAMDISK_KEY]: _, ...info } = node.driverInternalInfo;
        return {
          driverInternalInfo: {
            ...info,
            clean_steps: steps,
            ...(disableRamdisk ? { [CLEANING_DISABLE_RAMDISK_KEY]: true } : {}),
          },
        };
      };
    }
    if (event === 'service') {
      const steps = request.serviceSteps;
      if (!Array.isArray(steps) || steps.length === 0) {
        throw new MissingParameterValue('An explicit list of service steps (service_steps) is required for servicing.');
      }
      const disableRamdisk = request.disableRamdisk === true;
      return (node) => ({
        driverInternalInfo: {
          ...node.driverInternalInfo,
          [SERVICE_STEPS_KEY]: steps,
          ...(disableRamdisk ? { [SERVICE_DISABLE_RAMDISK_KEY]: true } : {}),
        },
      });
    }
    if (event === 'rescue') {
      const password = request.rescuePassword;
      if (typeof password !== 'string' || password.trim() === '') {
        throw new MissingParameterValue('A non-empty rescue_password is required to rescue a node.');
      }
      return (node) => ({ instanceInfo: { ...node.instanceInfo, rescue_password: password } });
    }
    if (event === 'deploy' || event === 'rebuild') {
      const { configdrive } = request;
      const userSteps = request.deploySteps?.length ? userDeployStepsOf(request.deploySteps) : undefined;
      return (node) => {
        // Steps given now replace any a former deploy left behind.
        const { [USER_DEPLOY_STEPS_KEY]: _, ...info } = node.driverInternalInfo;
        return {
          ...(configdrive !== undefined ? { instanceInfo: { ...node.instanceInfo, configdrive } } : {}),
          driverInternalInfo: userSteps ? { ...info, [USER_DEPLOY_STEPS_KEY]: userSteps } : info,
        };
      };
    }
    return () => ({});
  }

  /** Checks made before accepting an action, so a bad node is refused with 400 instead of failing later. */
  private async validateBefore(event: string, task: ConductorTask, userSteps: unknown[] | undefined): Promise<void> {
    const { driver } = task;
    if (event === 'deploy' || event === 'rebuild') {
      await driver.boot.validate(task);
      await driver.deploy.validate(task);
      await driver.power.validate(task);
      if (userSteps?.length) mergeDeploySteps(await driver.deploy.getDeploySteps(task), userDeployStepsOf(userSteps));
    } else if (event === 'rescue') {
      await driver.boot.validate(task);
      await driver.power.validate(task);
    } else if (event === 'service') {
      // As Ironic, so the user hears of a bad node at once.
      await driver.power.validate(task);
      await driver.network.validate(task);
    } else if (event === 'inspect') {
      await driver.inspect.validate(task);
      await driver.power.validate(task);
    }
  }

  /**
   * The background work of an accepted event, moving the node from `from` to
   * `to`, or how to prepare it when its first write can go with the transition.
   */
  private workAfter(event: string, from: string, to: string): { work?: ActionWork; prepare?: PreparedWork } {
    if (event === 'abort') return { work: this.abortWork(from) };
    // Unhold of a service goes on with its next step at once, as Ironic's continue_node_service.
    if (event === 'unhold' && from === S.SERVICE_HOLD) return { work: (task, ctx) => continueService(task, ctx) };
    const prepare = PREPARED_WORK_BY_STATE[to as S];
    return prepare ? { prepare } : { work: WORK_BY_STATE[to as S] };
  }

  private abortWork(waitState: string): ActionWork {
    return async (task, ctx) => {
      try {
        await tearDownWait(task, waitState);
      } catch (error) {
        task.logger.warn('tear down after abort failed', { error: message(error) });
      }
      if (SERVICE_ABORT_STATES.has(waitState)) await abortService(task, ctx.now);
    };
  }

  private async runWork(task: ConductorTask, work: ActionWork): Promise<void> {
    const state = task.node.provisionState;
    try {
      await work(task, this.ctx);
      task.logger.info('provision step finished', { from: state, to: task.node.provisionState });
    } catch (error) {
      const action = ACTION_NAMES[task.node.provisionState] ?? ACTION_NAMES[state] ?? 'provision';
      const lastError = `Failed to ${action} node ${task.node.uuid}: ${message(error)}`;
      if (isBmaasError(error)) task.logger.warn('provision step failed', { state, error: message(error) });
      else task.logger.error('provision step failed', { state, error: message(error), stack: (error as Error).stack });
      try {
        await tearDownWait(task, task.node.provisionState);
      } catch (cleanupError) {
        task.logger.warn('tear down after a failed step failed', { error: message(cleanupError) });
      }
      await failAction(task, lastError, this.ctx.now);
    }
  }
}

function isLate(node: NodeRecord, limitSeconds: number, now: Date): boolean {
  const since = node.provisionUpdatedAt ?? node.updatedAt ?? node.createdAt;
  return now.getTime() - since.getTime() > limitSeconds * 1000;
}
