import type { BmaasConfig } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import type { ConductorClient } from '@bmaas/rpc-client';
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
