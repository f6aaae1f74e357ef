import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  DatabaseUnavailable,
  type HtpasswdUsers,
  InvalidParameterValue,
  isBmaasError,
  type Logger,
  type Registry,
  TemporaryFailure,
  toErrorPayload,
  writesDebug,
} from '@bmaas/common';
import { isDatabaseUnavailable } from '@bmaas/db';
import type { RpcCallMetrics, RpcMethodName, RpcParams, RpcResult } from '@bmaas/rpc-client';
import { JSONRPCErrorException, JSONRPCServer } from 'json-rpc-2.0';

/** What a handler knows of its call. */
export interface RpcCall {
  requestId: string;
  /** Carries requestId and method. */
  logger: Logger;
}

/** One handler per method of the shared table: a method missing here fails the build. */
export type ConductorRpcHandlers = {
  [M in RpcMethodName]: (params: RpcParams<M>, call: RpcCall) => Promise<RpcResult<M>>;
};

export interface ConductorRpcServerOptions {
  handlers: ConductorRpcHandlers;
  logger: Logger;
  /** PEM certificate and key: serve HTTPS ([json_rpc]use_ssl). */
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /** [json_rpc]auth_strategy = http_basic. */
  auth?: HtpasswdUsers | undefined;
  /** Where each call's method, outcome and latency are recorded. */
  metrics: RpcCallMetrics;
  /** The process's metrics, served at `GET /metrics` (behind the same authentication as the calls). */
  registry: Registry;
  /** Largest request body accepted. */
  maxBodyBytes?: number;
}

/**
 * The headers of a JSON answer of `length` bytes, with `extra`. Not
 * `{ ...defaults, 'content-length': …, ...extra }`: on node 20's V8 an
 * object literal that starts with a spread and goes on gets a map of its
 * own every time once warm, one per batch of boot calls here
 * (docs/performance.md).
 */
export function jsonResponseHeaders(length: number, extra: http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.assign({ 'content-type': 'application/json', 'content-length': length }, extra);
}

/** What a handler knows of its call; the logger is made on first use (a child per boot call showed in the profile, and only failures log). */
class CallOf implements RpcCall {
  private callLogger: Logger | undefined;

  constructor(
    readonly requestId: string,
    private readonly method: string,
    private readonly parent: Logger,
  ) {}

  get logger(): Logger {
    this.callLogger ??= this.parent.child({ requestId: this.requestId, method: this.method });
    return this.callLogger;
  }
}

class BodyTooLarge extends Error {}

function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Keep reading (and dropping) so the 413 can still be written; the connection is closed after it.
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    });
    // A batch of boot calls fits in one chunk: no copy then.
    req.on('end', () =>
      resolve((chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8')),
    );
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, status: number, body?: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, jsonResponseHeaders(Buffer.byteLength(text), headers)).end(text);
}

/**
 * The conductor's JSON-RPC 2.0 server over HTTP(S) POST (any path). Domain
 * errors become JSON-RPC errors whose code is their status and whose data is
 * their payload (the class name crosses the wire); anything else is logged
 * and answered as a generic 500. Notifications (no id) get 204. `GET
 * /metrics` answers the conductor's metrics (Prometheus text format), with
 * the same authentication as the calls: this listener, not the public file
 * server booting machines reach.
 */
export class ConductorRpcServer {
  readonly server: http.Server;
  private readonly rpc = new JSONRPCServer({ errorListener: () => {} });
  private readonly logger: Logger;
  private accepting = true;
  private closed: Promise<void> = Promise.resolve();

  constructor(private readonly options: ConductorRpcServerOptions) {
    this.logger = options.logger;
    const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      this.handle(req, res).catch((error: Error) => {
        this.logger.error('JSON-RPC request failed', { error: error.message, stack: error.stack });
        if (!res.headersSent) send(res, 500, { error: 'internal error' });
        else res.destroy();
      });
    };
    this.server = options.tls
      ? https.createServer({ cert: options.tls.cert, key: options.tls.key }, listener)
      : http.createServer(listener);
    // Over TLS a client that speaks plain HTTP, or refuses our certificate, gets no answer: node:tls
    // closes the connection. Said in the log (at most once a minute: a scanner must not flood it).
    if (options.tls) this.server.on('tlsClientError', (error, socket) => this.tlsClientError(error, socket));
    // Idle pooled API connections stay open a minute (the client retries once if a reused one was closed).
    this.server.keepAliveTimeout = 65_000;
    for (const name of Object.keys(options.handlers) as RpcMethodName[]) {
      const handler = options.handlers[name] as (params: unknown, call: RpcCall) => Promise<unknown>;
      this.rpc.addMethod(name, (params: unknown) => this.dispatch(name, handler, params));
    }
  }

  private tlsWarnedAt = 0;
  private tlsErrorsSinceWarning = 0;

  private tlsClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
    socket.destroy();
    this.tlsErrorsSinceWarning++;
    const now = Date.now();
    if (now - this.tlsWarnedAt < 60_000) return;
    this.logger.warn(
      error.code === 'ERR_SSL_HTTP_REQUEST'
        ? 'JSON-RPC connection refused: a client spoke plain HTTP to this TLS port (its [json_rpc]use_ssl is off?)'
        : 'JSON-RPC connection refused: the TLS handshake failed (a client not trusting this certificate, or not speaking TLS)',
      {
        error: error.message,
        code: error.code,
        remoteAddress: (socket as Partial<Socket>).remoteAddress,
        refusedSinceLastWarning: this.tlsErrorsSinceWarning,
      },
    );
    this.tlsWarnedAt = now;
    this.tlsErrorsSinceWarning = 0;
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * From now on every call is refused with TemporaryFailure (the conductor is
   * stopping) and no new connection is taken; calls in progress finish.
   */
  stopAccepting(): void {
    if (!this.accepting) return;
    this.accepting = false;
    this.closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
  }

  /** Stops listening and drops the remaining connections. */
  async close(): Promise<void> {
    this.stopAccepting();
    this.server.closeAllConnections();
    await this.closed;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const scrape = req.method === 'GET' && req.url === '/metrics';
    if (req.method !== 'POST' && !scrape) {
      send(res, 405, { error: 'JSON-RPC takes POST only' }, { allow: 'POST' });
      return;
    }
    if (this.options.auth && !(await this.options.auth.verifyHeader(req.headers.authorization))) {
      send(res, 401, { error: 'authentication required' }, { 'www-authenticate': 'Basic realm="bmaas-conductor"' });
      return;
    }
    if (scrape) {
      const text = await this.options.registry.metrics();
      res.writeHead(200, {
        'content-type': this.options.registry.contentType,
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
      return;
    }
    let body: string;
    try {
      body = await readBody(req, this.options.maxBodyBytes ?? 1024 * 1024);
    } catch (error) {
      if (error instanceof BodyTooLarge) send(res, 413, { error: 'request body too large' }, { connection: 'close' });
      return;
    }
    const response = await this.rpc.receiveJSON(body);
    if (response === null) send(res, 204);
    else send(res, 200, response);
  }

  private async dispatch(
    method: RpcMethodName,
    handler: (params: unknown, call: RpcCall) => Promise<unknown>,
    params: unknown,
  ): Promise<unknown> {
    const context = (params as { context?: { request_id?: unknown } } | undefined)?.context;
    const given = context?.request_id;
    const requestId =
      typeof given === 'string' && given.length > 0 && given.length <= 128 ? given : `req-${randomUUID()}`;
    const call = new CallOf(requestId, method, this.logger);
    const started = performance.now();
    try {
      if (!this.accepting) throw new TemporaryFailure('The conductor is shutting down, please retry.');
      if (params === null || typeof params !== 'object' || Array.isArray(params)) {
        throw new InvalidParameterValue('JSON-RPC params must be an object.');
      }
      const { context: _, ...rest } = params as Record<string, unknown>;
      const result = await handler(rest, call);
      this.options.metrics.observe(method, undefined, started);
      return result ?? null;
    } catch (raised) {
      const error = isDatabaseUnavailable(raised) ? new DatabaseUnavailable() : raised;
      this.options.metrics.observe(method, error, started);
      if (isBmaasError(error)) {
        // A refusal is the caller's business; only a fault of ours is an error in our log.
        if (error.status >= 500 && !(error instanceof TemporaryFailure) && !(error instanceof DatabaseUnavailable)) {
          call.logger.error('RPC call failed', { error: error.message, code: error.code });
        } else if (writesDebug(this.logger)) {
          call.logger.debug('RPC call refused', { error: error.message, code: error.code });
        }
        throw new JSONRPCErrorException(error.message, error.status, toErrorPayload(error));
      }
      call.logger.error('unexpected error in an RPC method', {
        error: (error as Error)?.message,
        stack: (error as Error)?.stack,
      });
      throw new JSONRPCErrorException('Internal error in the conductor; see its log.', 500);
    }
  }
}
