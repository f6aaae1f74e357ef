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
   * InvalidStateRequested in any other state, NodeLocked. When
   * `agent_token` is given (the API always gives it) it must equal the token
   * issued at lookup, compared in constant time, else InvalidParameterValue.
   */
  heartbeat: {
    params: { node_id: string; callback_url?: string; agent_version?: string; agent_token?: string };
    result: null;
  };
  /**
   * The node as its agent sees it at lookup, with the agent token (Ironic's
   * get_node_with_token). The first call for a node generates the token,
   * stores it in driver_internal_info.agent_secret_token under the exclusive
   * lock and returns it; later calls return "******" until a new provision or
   * power action clears it. Throws NodeLocked.
   */
  get_node_with_token: { params: { node_id: string }; result: AgentLookupNode };
  /**
   * The inspection ramdisk posted its inventory (already checked by the API:
   * at least one interface, each with a MAC). In `inspect wait` the node
   * moves to `inspecting` and the conductor answers; in the background it
   * stores the inventory, sets the properties, creates the ports, tidies up
   * the ramdisk boot and powers off, then `manageable` (or `inspect failed`).
   * A node in `enroll` (just discovered) only has its inventory processed.
   * Throws InvalidStateRequested in any other state, NodeLocked.
   */
  continue_inspection: {
    params: { node_id: string; inventory: Record<string, unknown>; plugin_data: Record<string, unknown> };
    result: null;
  };
}

/** What get_node_with_token answers: the fields a lookup shows, and the token (or "******"). */
export interface AgentLookupNode {
  uuid: string;
  properties: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  /** agent_secret_token in it is always "******": the token travels in agent_token only. */
  driver_internal_info: Record<string, unknown>;
  agent_token: string;
}

export type RpcMethodName = keyof ConductorRpcMethods;
export type RpcParams<M extends RpcMethodName> = ConductorRpcMethods[M]['params'];
export type RpcResult<M extends RpcMethodName> = ConductorRpcMethods[M]['result'];
