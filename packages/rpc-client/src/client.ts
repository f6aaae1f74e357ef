import type { RpcMethodName, RpcParams, RpcResult } from './methods.js';
import type { NodeRoutingKey } from './ring.js';

export interface ConductorCallOptions {
  /** Request id that travels into the conductor's logs. */
  requestId?: string;
  /**
   * Per-call timeout in milliseconds; default [json_rpc]timeout. It bounds
   * the whole call, finding the owner included: by then the call has
   * answered or failed (RpcTimeout).
   */
  timeoutMs?: number;
}

/**
 * How the API reaches the conductor that owns a node: ring lookup, then a
 * JSON-RPC call. Domain errors thrown by the conductor are rethrown as the
 * same classes (allow-list); no alive conductor -> TemporaryFailure; none for
 * the node's key -> NoValidHost; timeout -> RpcTimeout.
 */
export interface ConductorClient {
  callForNode<M extends RpcMethodName>(
    node: NodeRoutingKey,
    method: M,
    params: RpcParams<M>,
    options?: ConductorCallOptions,
  ): Promise<RpcResult<M>>;
  /**
   * Calls any alive conductor, chosen at random (Ironic's random topic), for
   * work that belongs to no node (create_allocation). TemporaryFailure when
   * none is alive; otherwise as callForNode.
   */
  callAny<M extends RpcMethodName>(
    method: M,
    params: RpcParams<M>,
    options?: ConductorCallOptions,
  ): Promise<RpcResult<M>>;
  /** Hostname of the owning conductor (the `conductor` field of node and port answers). */
  hostFor(node: NodeRoutingKey): Promise<string>;
  /** Closes pooled connections. */
  close(): Promise<void>;
}
