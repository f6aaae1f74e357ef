import { checkInspectionBody, InvalidParameterValue } from '@bmaas/common';
import { getNodeWithToken } from '../agent/agent-token.js';
import type { ProvisioningRunner } from '../provisioning/runner.js';
import type { TaskManager } from '../task-manager.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';

export interface RpcHandlerDeps {
  runner: ProvisioningRunner;
  tasks: TaskManager;
}

function requireString(params: object, key: string): string {
  const value = (params as Record<string, unknown>)[key];
  if (typeof value !== 'string' || value === '') {
    throw new InvalidParameterValue(`Parameter ${key} must be a non-empty string.`, { parameter: key });
  }
  return value;
}

/** A parameter that may be absent but, when given, must be a string (never silently dropped). */
function optionalString(params: object, key: string): string | undefined {
  const value = (params as Record<string, unknown>)[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new InvalidParameterValue(`Parameter ${key} must be a string.`, { parameter: key });
  }
  return value;
}

/** The conductor's side of the method table in @bmaas/rpc-client. */
export function createRpcHandlers({ runner, tasks }: RpcHandlerDeps): ConductorRpcHandlers {
  return {
    async do_provisioning_action(params, { requestId }) {
      await runner.doProvisioningAction(requireString(params, 'node_id'), requireString(params, 'event'), {
        requestId,
        cleanSteps: params.clean_steps,
        rescuePassword: params.rescue_password,
      });
      return null;
    },

    async change_node_power_state(params, { requestId }) {
      await runner.changePowerState(requireString(params, 'node_id'), requireString(params, 'new_state'), {
        requestId,
      });
      return null;
    },

    async get_boot_config(params, { requestId }) {
      const name = requireString(params, 'name');
      // Shared lock: a read of the node and of files already rendered; validate() is deliberately not called.
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'get boot config', requestId },
        async (task) => ({ content: await task.driver.boot.getBootConfig(task, name) }),
      );
    },

    async heartbeat(params, { requestId }) {
      await runner.heartbeat(requireString(params, 'node_id'), {
        requestId,
        callbackUrl: typeof params.callback_url === 'string' ? params.callback_url : undefined,
        agentVersion: typeof params.agent_version === 'string' ? params.agent_version : undefined,
        agentToken: optionalString(params, 'agent_token'),
      });
      return null;
    },

    async continue_inspection(params, { requestId }) {
      await runner.continueInspection(
        requireString(params, 'node_id'),
        checkInspectionBody({ ...params.plugin_data, inventory: params.inventory }),
        { requestId },
      );
      return null;
    },

    async get_node_with_token(params, { requestId }) {
      return getNodeWithToken(tasks, requireString(params, 'node_id'), requestId);
    },
  };
}
