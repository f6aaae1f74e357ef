import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Logger, writesDebug } from '@bmaas/common';
import { type BootConfigAnswer, type BootConfigController, DISCOVERY_NODE } from './boot-config-controller.js';
import type { BootRequestEvent, BootRequestObserver } from './boot-request-observer.js';

/** The one answer to every refused boot request: same status, headers and body, whatever the cause. */
export const BOOT_NOT_FOUND_BODY = JSON.stringify({
  error_message: JSON.stringify({ faultcode: 'Client', faultstring: 'Resource could not be found.', debuginfo: null }),
});

const SERVER_FAULT_BODY = JSON.stringify({
  error_message: JSON.stringify({
    faultcode: 'Server',
    faultstring: 'An unexpected error prevented the server from fulfilling your request.',
    debuginfo: null,
  }),
});

/** `/v1/boot`, `/v1/boot/…` or `/v1/boot?…`: what the boot handler answers (any case, as express's mount matched). */
const BOOT_PREFIX = /^\/v1\/boot(?=[/?]|$)/i;

/** `http://host:port` ahead of the path of an absolute-form request target (RFC 9112 3.2.2). */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/**
 * The request target as an origin-form path when it names the boot
 * configuration API, else undefined. Equivalent spellings reach the boot
 * handler too: an absolute-form target (`GET http://api:6385/v1/boot/…`) and
 * repeated slashes (`/v1//boot/…`), so every refusal is the boot handler's
 * one uniform 404, never the REST router's.
 */
export function bootConfigTarget(url: string): string | undefined {
  if (BOOT_PREFIX.test(url)) return url;
  const absolute = ABSOLUTE_FORM.exec(url);
  const target = absolute ? url.slice(absolute[0].length) : url;
  const query = target.indexOf('?');
  const path = query < 0 ? target : target.slice(0, query);
  const normalised = `/${path.split('/').filter(Boolean).join('/')}${query < 0 ? '' : target.slice(query)}`;
  return BOOT_PREFIX.test(normalised) ? normalised : undefined;
}

/** One percent-decoding: a segment that still holds a `%` afterwards was encoded twice and is refused. */
function decode(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    const decoded = decodeURIComponent(segment);
    return decoded.includes('%') ? undefined : decoded;
  } catch {
    return undefined;
  }
}

function send(
  res: ServerResponse,
  head: boolean,
  status: number,
  contentType: string,
  body: string,
  requestId: string,
): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'Openstack-Request-Id': requestId,
    'X-Openstack-Request-Id': requestId,
  });
  res.end(head ? undefined : body);
}

/**
 * Tells each observer of one answered request (nothing is built when there is
 * none). The answer is already sent: an observer that throws loses its record
 * and is logged; the others still run.
 */
function notify(
  observers: readonly BootRequestObserver[],
  logger: Logger,
  outcome: BootRequestEvent['outcome'],
  name: string | undefined,
  answer: BootConfigAnswer | undefined,
  started: number,
): void {
  if (observers.length === 0) return;
  const event: BootRequestEvent = {
    outcome,
    name,
    mac: answer?.mac,
    nodeUuid: answer?.nodeUuid === DISCOVERY_NODE ? undefined : answer?.nodeUuid,
    durationSeconds: (performance.now() - started) / 1000,
  };
  for (const observer of observers) {
    try {
      observer.observe(event);
    } catch (error) {
      logger.error('boot request observer failed', { stack: error instanceof Error ? error.stack : String(error) });
    }
  }
}

/**
 * The node:http handler of `/v1/boot/<MAC>/<NAME>`, ahead of the express app
 * (see createApiListener): a boot storm is thousands of these a second and
 * express's routing would cost more than the rest of the request. It parses
 * the raw path itself so that malformed encodings, extra segments and wrong
 * methods end in the same 404 as an unknown MAC; it is not versioned and
 * needs no authentication (firmware sends a bare GET). It writes no access
 * log line: refusals are logged at info with their reason, answers at debug.
 *
 * Each observer hears of every answered request once, after the answer is
 * written (metrics, the recent boot log), a 500 as `server-error`. Observers
 * run on the request's path: they must be synchronous and cheap. What they
 * hear never reaches the requester.
 */
export function createBootConfigHandler(
  controller: Pick<BootConfigController, 'answer'>,
  logger: Logger,
  observers: readonly BootRequestObserver[],
) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = performance.now();
    const requestId = `req-${randomUUID()}`;
    const url = req.url ?? '';
    const head = req.method === 'HEAD';
    let name: string | undefined;
    let answer: BootConfigAnswer;
    try {
      const segments = (url.split('?', 1)[0] as string).replace(BOOT_PREFIX, '').split('/').slice(1);
      if ((req.method !== 'GET' && !head) || segments.length !== 2) {
        answer = { ok: false, reason: 'malformed-request' };
      } else {
        const mac = decode(segments[0] as string);
        name = decode(segments[1] as string);
        answer =
          mac === undefined || name === undefined
            ? { ok: false, reason: 'malformed-request' }
            : await controller.answer(mac, name, requestId);
      }
    } catch (error) {
      logger.error('boot config request failed', {
        requestId,
        path: url.slice(0, 200),
        stack: error instanceof Error ? error.stack : String(error),
      });
      send(res, head, 500, 'application/json; charset=utf-8', SERVER_FAULT_BODY, requestId);
      notify(observers, logger, 'server-error', name, undefined, started);
      return;
    }

    if (answer.ok) {
      send(res, head, 200, 'text/plain; charset=utf-8', answer.content, requestId);
      notify(observers, logger, 'served', name, answer, started);
      if (writesDebug(logger)) {
        logger.debug('boot config served', {
          nodeUuid: answer.nodeUuid,
          requestId,
          durationMs: Math.round((performance.now() - started) * 10) / 10,
        });
      }
      return;
    }
    send(res, head, 404, 'application/json; charset=utf-8', BOOT_NOT_FOUND_BODY, requestId);
    notify(observers, logger, answer.reason, answer.reason === 'malformed-request' ? undefined : name, answer, started);
    logger.info(`boot config refused: ${answer.reason}`, {
      reason: answer.reason,
      nodeUuid: answer.nodeUuid,
      detail: answer.detail,
      method: req.method,
      path: url.slice(0, 200),
      requestId,
    });
  };
}
