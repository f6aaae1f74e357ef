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
    params: {
      node_id: string;
      event: string;
      clean_steps?: unknown[];
      rescue_password?: string;
      /** deploy/rebuild: base64 of a gzipped ISO, a URL, or the object form; stored in instance_info.configdrive. */
      configdrive?: string | Record<string, unknown>;
    };
    result: null;
  };
  /**
   * Every interface's validate() for the node, under a shared lock (Ironic's
   * validate_driver_interfaces): per interface `result` (true, false, or null
   * when the node has no such interface) and `reason` when not true.
   */
  validate_driver_interfaces: {
    params: { node_id: string };
    result: Record<string, { result: boolean | null; reason?: string }>;
  };
  /** Sets the node's power state (power on, power off, rebooting, …), asynchronously like the above. */
  change_node_power_state: { params: { node_id: string; new_state: string }; result: null };
  /** Boot configuration file `name` of a node, read under a shared lock. Throws BootConfigNotFound, UnsupportedDriverExtension. */
  get_boot_config: { params: { node_id: string; name: string }; result: { content: string } };
  /**
   * The node's agent called back. The conductor takes the exclusive lock,
   * checks the token (when given; the API always gives it: it must equal the
   * one issued at lookup, compared in constant time), TLS ([agent]require_tls)
   * and that `agent_verify_ca` did not change (else InvalidParameterValue),
   * records the agent's URL, version and certificate and answers. In `wait
   * call-back`, `clean wait` or `rescue wait` it then checks in the
   * background whether the step that waited finished and goes on with the
   * action; in deploying, cleaning or rescuing it only records. Throws
   * InvalidStateRequested in any other state, NodeLocked.
   */
  heartbeat: {
    params: {
      node_id: string;
      callback_url?: string;
      agent_version?: string;
      agent_token?: string;
      agent_verify_ca?: string;
    };
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
