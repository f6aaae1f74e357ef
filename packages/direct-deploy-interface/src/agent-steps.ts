import type { AgentCommandResult } from '@bmaas/agent-client';
import { AgentCommandFailed } from '@bmaas/agent-client';
import { type JsonObject, portDict } from '@bmaas/common';
import type { ProvisionStep, StepOutcome, Task } from '@bmaas/driver-api';

/** Keys of a node's secrets that never leave the conductor, even towards the agent. */
const SECRET = /password|secret|token|private|key$/i;

function masked(info: JsonObject, keep: readonly string[] = []): JsonObject {
  return Object.fromEntries(
    Object.entries(info).map(([key, value]) => [key, SECRET.test(key) && !keep.includes(key) ? '******' : value]),
  );
}

/** The `node` parameter of step commands: Ironic's node dict, secrets masked. */
export function agentNodeOf(task: Task): JsonObject {
  const { node } = task;
  return {
    uuid: node.uuid,
    name: node.name,
    driver: node.driver,
    properties: node.properties,
    instance_info: masked(node.instanceInfo, ['configdrive']),
    driver_info: masked(node.driverInfo),
    driver_internal_info: masked(node.driverInternalInfo),
    target_raid_config: {},
    provision_state: node.provisionState,
  };
}

/** The `ports` parameter: Ironic's port dicts. */
export function agentPortsOf(task: Task): JsonObject[] {
  return task.ports.map(portDict);
}

/** "deploy.write_image" */
export function stepName(step: Pick<ProvisionStep, 'interface' | 'step'>): string {
  return `${step.interface}.${step.step}`;
}

/**
 * Judges an in-band step from the agent's last command, as Ironic does on
 * each heartbeat: only the last command counts. RUNNING, or a finished
 * command for another step ("not started yet"), is 'wait'; SUCCEEDED for
 * this step is 'done'; FAILED (or a version mismatch) throws with the
 * agent's message.
 */
export function stepStatus(
  last: AgentCommandResult | undefined,
  command: 'execute_deploy_step' | 'execute_clean_step',
  resultKey: 'deploy_step' | 'clean_step',
  step: ProvisionStep,
  what: 'Deploy' | 'Clean',
): StepOutcome {
  if (!last || last.command_name !== command || last.command_status === 'RUNNING') return 'wait';
  if (last.command_status !== 'SUCCEEDED') {
    const message = last.command_error?.message ?? last.command_error?.details ?? last.command_status;
    throw new AgentCommandFailed(`${what} step ${stepName(step)}`, message, last.command_status);
  }
  const reported = (last.command_result?.[resultKey] ?? {}) as Partial<ProvisionStep>;
  return reported.interface === step.interface && reported.step === step.step ? 'done' : 'wait';
}

/** Flattens an agent's `{manager: [step, …]}` answer into steps with interface, name, priority and args. */
export function flattenAgentSteps(byManager: unknown): ProvisionStep[] {
  if (!byManager || typeof byManager !== 'object') return [];
  const steps = new Map<string, ProvisionStep>();
  for (const list of Object.values(byManager as Record<string, unknown>)) {
    if (!Array.isArray(list)) continue;
    for (const raw of list as JsonObject[]) {
      if (typeof raw.step !== 'string' || typeof raw.interface !== 'string') continue;
      const step: ProvisionStep = {
        interface: raw.interface,
        step: raw.step,
        priority: typeof raw.priority === 'number' ? raw.priority : 0,
        args: {},
      };
      const key = stepName(step);
      // Managers are listed by precedence: the first one offering a step runs it.
      if (!steps.has(key)) steps.set(key, step);
    }
  }
  return [...steps.values()];
}
