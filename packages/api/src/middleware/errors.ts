import { isBmaasError, type Logger, ResourceNotFound } from '@bmaas/common';
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

function parserError(error: unknown): HttpParserError | undefined {
  const e = error as HttpParserError;
  return typeof e?.type === 'string' && typeof e.status === 'number' ? e : undefined;
}

/**
 * The one place errors become HTTP answers: domain errors keep their status
 * and message; body-parser errors become 4xx; anything else is a 500 whose
 * details stay in the log. Only 5xx are logged as errors.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const log = req.context?.logger ?? logger;
    if (isBmaasError(error)) {
      if (error instanceof MethodNotAllowed) res.setHeader('Allow', error.allowed.join(', '));
      if (error.status >= 500) log.error(`${error.code}: ${error.message}`, { code: error.code });
      else log.debug(`${error.code}: ${error.message}`, { code: error.code, status: error.status });
      sendFault(res, error.status, error.message);
      return;
    }
    const parser = parserError(error);
    if (parser && parser.status !== undefined && parser.status < 500) {
      const message =
        parser.type === 'entity.parse.failed'
          ? 'The request body is not valid JSON.'
          : parser.expose
            ? parser.message
            : 'The request body could not be read.';
      log.debug(`bad request body: ${parser.message}`, { status: parser.status });
      sendFault(res, parser.status, message);
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
