/**
 * The conductor's JSON-RPC methods: one typed table shared by the server
 * (packages/conductor) and the client. Parameter names follow Ironic's RPC
 * API (snake_case, `node_id` = node uuid); every call also carries `context`.
 */
export interface RequestContext {
  request_id: string;
}

export interface ConductorRpcMethods {
  /** Boot configuration file `name` of a node, read under a shared lock. */
  get_boot_config: { params: { node_id: string; name: string }; result: { content: string } };
}

export type RpcMethodName = keyof ConductorRpcMethods;
export type RpcParams<M extends RpcMethodName> = ConductorRpcMethods[M]['params'];
export type RpcResult<M extends RpcMethodName> = ConductorRpcMethods[M]['result'];
