import { DatabaseUnavailable, isBmaasError, type Logger, ResourceNotFound } from '@bmaas/common';
import { isDatabaseUnavailable } from '@bmaas/db';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { MethodNotAllowed } from '../errors.js';

/** Ironic's error body: the fault is a JSON document encoded as a string. */
export function sendFault(res: Response, status: number, message: string): void {
  const fault = { faultcode: status >= 500 ? 'Server' : 'Client', faultstring: message, debuginfo: null };
  res.status(status).json({ error_message: JSON.stringify(fault) });
}

/** Errors raised by express's body parser carry a status and a type. */
interface HttpParserError {
  status?: number;
  type?: string;
  expose?: boolean;
  message: string;
}

/**
 * An error of the HTTP layer (body parser, decompression, the router's
 * parameter decoding) that carries a 4xx status: the client's fault.
 */
function clientHttpError(error: unknown): HttpParserError | undefined {
  const e = error as HttpParserError;
  return typeof e?.status === 'number' && e.status >= 400 && e.status < 500 ? e : undefined;
}

function clientHttpMessage(error: HttpParserError): string {
  if (error.type === 'entity.parse.failed') return 'The request body is not valid JSON.';
  if (error instanceof URIError) return 'The request path holds a malformed percent-encoding.';
  return error.expose && error.type !== undefined ? error.message : 'The request body could not be read.';
}

/**
 * The one place errors become HTTP answers: domain errors keep their status
 * and message; HTTP-layer errors with a 4xx status (body parser,
 * decompression, path decoding) keep it; anything else is a 500 whose
 * details stay in the log. A database out of reach or too slow is a 503
 * (DatabaseUnavailable). Only 5xx are logged as errors.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (raised, req, res, next) => {
    if (res.headersSent) {
      next(raised);
      return;
    }
    const log = req.context?.logger ?? logger;
    const error = isDatabaseUnavailable(raised) ? new DatabaseUnavailable() : raised;
    if (isBmaasError(error)) {
      if (error instanceof MethodNotAllowed) res.setHeader('Allow', error.allowed.join(', '));
      if (error.status >= 500) log.error(`${error.code}: ${error.message}`, { code: error.code });
      else log.debug(`${error.code}: ${error.message}`, { code: error.code, status: error.status });
      sendFault(res, error.status, error.message);
      return;
    }
    const client = clientHttpError(error);
    if (client?.status !== undefined) {
      log.debug(`bad request: ${client.message}`, { status: client.status });
      sendFault(res, client.status, clientHttpMessage(client));
      return;
    }
    log.error(`unexpected error on ${req.method} ${req.path}`, {
      stack: error instanceof Error ? error.stack : String(error),
    });
    sendFault(res, 500, 'An unexpected error prevented the server from fulfilling your request.');
  };
}

/** Answer for paths no router knows. */
export const notFound: RequestHandler = () => {
  throw new ResourceNotFound('The resource could not be found.');
};
