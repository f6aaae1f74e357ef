import type { Logger } from '@bmaas/common';
import type { Request } from 'express';

/** What the first middlewares learn about a request, for everything after them. */
export interface ApiRequestContext {
  /** `req-<uuid>`, answered in Openstack-Request-Id and passed to conductors. */
  requestId: string;
  /** The API logger with this request's id. */
  logger: Logger;
  /** Negotiated microversion (minor part; the major is always 1). */
  minor: number;
}

declare global {
  namespace Express {
    interface Request {
      context: ApiRequestContext;
    }
  }
}

/** The negotiated minor version of a request. */
export function minorOf(req: Request): number {
  return req.context.minor;
}
