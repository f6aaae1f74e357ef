import type { BmaasConfig, NodeRecord } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import type { ConductorClient, RpcMethodName, RpcParams, RpcResult } from '@bmaas/rpc-client';
import { Router as createRouter, type Request, type Router } from 'express';
import { MethodNotAllowed } from './errors.js';
import { publicUrl } from './links.js';
import type { NodeService } from './node-service.js';
import type { PortService } from './port-service.js';

/** What every router factory receives. */
export interface RouteDeps {
  config: BmaasConfig;
  stores: Stores;
  conductors: ConductorClient;
  nodes: NodeService;
  ports: PortService;
}

/**
 * Calls `method` on the conductor that owns `node`, for this request: the
 * node's uuid goes as `node_id`, the request id into the conductor's logs.
 */
export function callNodeConductor<M extends RpcMethodName>(
  deps: Pick<RouteDeps, 'conductors'>,
  req: Request,
  node: NodeRecord,
  method: M,
  params: Omit<RpcParams<M>, 'node_id'>,
): Promise<RpcResult<M>> {
  const withNode = { ...params, node_id: node.uuid } as RpcParams<M>;
  return deps.conductors.callForNode(node, method, withNode, { requestId: req.context.requestId });
}

/** Base URL for the links of this request's answer. */
export function baseUrlOf(req: Request, deps: RouteDeps): string {
  return publicUrl(req, deps.config.api.public_endpoint);
}

export function queryOf(req: Request): Record<string, unknown> {
  return (req.query ?? {}) as Record<string, unknown>;
}

/** A router whose listed paths answer 405 (with Allow) to methods they do not serve. */
export function resourceRouter(): { router: Router; allow: (path: string, methods: readonly string[]) => void } {
  const router = createRouter();
  const allow = (path: string, methods: readonly string[]) => {
    router.all(path, (req) => {
      throw new MethodNotAllowed(req.method, methods);
    });
  };
  return { router, allow };
}
