import type { Logger } from '@bmaas/common';
import type { NextFunction, Request, Response } from 'express';
import type { BootConfigController } from './boot-config-controller.js';

/** The one answer to every refused boot request: same status, headers and body, whatever the cause. */
export const BOOT_NOT_FOUND_BODY = JSON.stringify({
  error_message: JSON.stringify({ faultcode: 'Client', faultstring: 'Resource could not be found.', debuginfo: null }),
});

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Express handler for `/v1/boot/<MAC>/<NAME>`, mounted with app.use('/v1/boot').
 * It parses the raw path itself so that malformed encodings, extra segments
 * and wrong methods end in the same 404 as an unknown MAC; it is not versioned
 * and needs no authentication (firmware sends a bare GET).
 */
export function createBootConfigHandler(controller: BootConfigController, logger: Logger) {
  return async (req: Request, res: Response, _next: NextFunction): Promise<void> => {
    const requestId = res.getHeader('openstack-request-id') as string | undefined;
    const path = req.url.split('?', 1)[0] as string;
    const segments = path.split('/').slice(1);
    let answer: Awaited<ReturnType<BootConfigController['answer']>>;
    if ((req.method !== 'GET' && req.method !== 'HEAD') || segments.length !== 2) {
      answer = { ok: false, reason: 'malformed-request' };
    } else {
      const mac = decode(segments[0] as string);
      const name = decode(segments[1] as string);
      answer =
        mac === undefined || name === undefined
          ? { ok: false, reason: 'malformed-request' }
          : await controller.answer(mac, name, requestId);
    }

    if (answer.ok) {
      logger.debug('boot config served', { nodeUuid: answer.nodeUuid, requestId });
      res.status(200).set({ 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : answer.content);
      return;
    }
    logger.info(`boot config refused: ${answer.reason}`, {
      reason: answer.reason,
      nodeUuid: answer.nodeUuid,
      detail: answer.detail,
      path: req.originalUrl.slice(0, 200),
      requestId,
    });
    res.status(404).set({ 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : BOOT_NOT_FOUND_BODY);
  };
}
