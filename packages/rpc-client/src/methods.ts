/**
 * The conductor's JSON-RPC methods: one typed table shared by the server
 * (packages/conductor) and the client. Parameter names follow Ironic's RPC
 * API (snake_case; `node_id` is the node's uuid); every call also carries
 * `context` ({ request_id }), added by the client.
 */
export interface RequestContext {
  request_id: string;
}

export interface ConductorRpcMethods {
  /**
   * Fires a provisioning event (deploy, delete, manage, provide, …) on a node.
   * The conductor takes the exclusive lock, checks the transition, moves the
   * node to the transient state and answers; the work then goes on in the
   * background under the lock. Throws NodeLocked, InvalidStateRequested.
   */
  do_provisioning_action: {
    params: { node_id: string; event: string; clean_steps?: unknown[]; rescue_password?: string };
    result: null;
  };
  /** Sets the node's power state (power on, power off, rebooting, …), asynchronously like the above. */
  change_node_power_state: { params: { node_id: string; new_state: string }; result: null };
  /** Boot configuration file `name` of a node, read under a shared lock. Throws BootConfigNotFound, UnsupportedDriverExtension. */
  get_boot_config: { params: { node_id: string; name: string }; result: { content: string } };
  /**
   * The node's agent called back. In `wait call-back`, `clean wait` or
   * `rescue wait` the conductor takes the exclusive lock, resumes the step
   * that waited (deploy.continueDeploy, deploy.continueCleaning, finishing
   * the rescue) and answers; the work goes on in the background. Throws
   * InvalidStateRequested in any other state, NodeLocked.
   */
  heartbeat: { params: { node_id: string; callback_url?: string; agent_version?: string }; result: null };
}

export type RpcMethodName = keyof ConductorRpcMethods;
export type RpcParams<M extends RpcMethodName> = ConductorRpcMethods[M]['params'];
export type RpcResult<M extends RpcMethodName> = ConductorRpcMethods[M]['result'];
