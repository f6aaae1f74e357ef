import { randomUUID } from 'node:crypto';
import type { Logger } from '@bmaas/common';
import type { RequestHandler } from 'express';
import { DEFAULT_MINOR } from '../versions.js';

/**
 * Gives every request an id (`req-<uuid>`), answered in both request-id
 * headers, a child logger carrying it, and one access log line when the
 * answer has been sent.
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    const requestId = `req-${randomUUID()}`;
    req.context = { requestId, logger: logger.child({ requestId }), minor: DEFAULT_MINOR };
    res.setHeader('Openstack-Request-Id', requestId);
    res.setHeader('X-Openstack-Request-Id', requestId);
    res.once('finish', () => {
      if (!logger.isInfoEnabled()) return;
      logger.info(`${req.method} ${req.originalUrl} ${res.statusCode}`, {
        requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      });
    });
    next();
  };
}
