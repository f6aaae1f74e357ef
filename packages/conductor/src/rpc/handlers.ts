import { checkInspectionBody, InvalidParameterValue } from '@bmaas/common';
import { getNodeWithToken } from '../agent/agent-token.js';
import type { AllocationProcessor } from '../allocations/allocation-processor.js';
import type { NodeHistoryWriter } from '../history/node-history-writer.js';
import { ServedConfigHistory } from '../history/served-config-history.js';
import type { ProvisioningRunner } from '../provisioning/runner.js';
import { validateInterfaces } from '../provisioning/validate-interfaces.js';
import type { DriverRegistry } from '../registry/driver-registry.js';
import type { TaskManager } from '../task-manager.js';
import { createIndicatorHandlers } from './indicator-handlers.js';
import type { ConductorRpcHandlers } from './json-rpc-server.js';
import { createManagementHandlers } from './management-handlers.js';
import { createNodeHardwareHandlers } from './node-hardware-handlers.js';
import { optionalString, requireString } from './params.js';

export interface RpcHandlerDeps {
  runner: ProvisioningRunner;
  tasks: TaskManager;
  /** Records served boot configurations (node history; a repeat within a minute is not recorded again). */
  history?: Pick<NodeHistoryWriter, 'record'>;
  registry: Pick<DriverRegistry, 'propertiesOf' | 'discoveryConfig'>;
  /** Processes the allocations create_allocation hands this conductor; without it the method fails. */
  allocations?: Pick<AllocationProcessor, 'take'>;
}

/** The conductor's side of the method table in @bmaas/rpc-client. */
export function createRpcHandlers({
  runner,
  tasks,
  history,
  registry,
  allocations,
}: RpcHandlerDeps): ConductorRpcHandlers {
  const servedConfigs = history ? new ServedConfigHistory(history) : undefined;
  return {
    ...createManagementHandlers(tasks),
    ...createIndicatorHandlers(tasks),

    async do_provisioning_action(params, { requestId }) {
      await runner.doProvisioningAction(requireString(params, 'node_id'), requireString(params, 'event'), {
        requestId,
        cleanSteps: params.clean_steps,
        serviceSteps: params.service_steps,
        deploySteps: params.deploy_steps,
        disableRamdisk: params.disable_ramdisk,
        rescuePassword: params.rescue_password,
        configdrive: params.configdrive,
      });
      return null;
    },

    async validate_driver_interfaces(params, { requestId }) {
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, purpose: 'validate driver interfaces', requestId },
        (task) => validateInterfaces(task),
      );
    },

    async change_node_power_state(params, { requestId }) {
      const timeout = params.timeout;
      if (timeout !== undefined && timeout !== null && !(Number.isInteger(timeout) && timeout > 0)) {
        throw new InvalidParameterValue('Parameter timeout must be a whole number of seconds greater than 0.');
      }
      await runner.changePowerState(requireString(params, 'node_id'), requireString(params, 'new_state'), {
        requestId,
        timeoutSeconds: timeout ?? undefined,
      });
      return null;
    },

    async get_boot_config(params, { requestId }) {
      const name = requireString(params, 'name');
      // Shared lock: a read of the node (from the boot path's cache when on) and of files already rendered;
      // validate() is deliberately not called.
      return tasks.withTask(
        requireString(params, 'node_id'),
        { shared: true, cached: true, purpose: 'get boot config', requestId },
        async (task) => {
          const content = await task.driver.boot.getBootConfig(task, name);
          servedConfigs?.served(task.node, name);
          return { content };
        },
      );
    },

    async get_discovery_config(params) {
      return { content: await registry.discoveryConfig(requireString(params, 'name')) };
    },

    async heartbeat(params, { requestId }) {
      await runner.heartbeat(requireString(params, 'node_id'), {
        requestId,
        callbackUrl: typeof params.callback_url === 'string' ? params.callback_url : undefined,
        agentVersion: typeof params.agent_version === 'string' ? params.agent_version : undefined,
        agentToken: optionalString(params, 'agent_token'),
        agentVerifyCa: optionalString(params, 'agent_verify_ca'),
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

    ...createNodeHardwareHandlers(tasks),
    async create_allocation(params) {
      if (!allocations) throw new Error('this conductor does not process allocations');
      await allocations.take(requireString(params, 'allocation_id'));
      return null;
    },
    async get_driver_properties(params) {
      return registry.propertiesOf(requireString(params, 'driver_name'));
    },
  };
}
