import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import {
  type BmaasError,
  type ConfigSection,
  fromErrorPayload,
  type Logger,
  markConnectionReuse,
  RpcTimeout,
  retryOnStaleConnection,
  TemporaryFailure,
  TurnBatcher,
  UnexpectedRpcError,
} from '@bmaas/common';
import { createJSONRPCRequest, isJSONRPCResponse, type JSONRPCRequest, type JSONRPCResponse } from 'json-rpc-2.0';
import type { ConductorCallOptions, ConductorClient } from './client.js';
import type { RequestContext, RpcMethodName, RpcParams, RpcResult } from './methods.js';
import type { ConductorRing, NodeRoutingKey } from './ring.js';
import type { RpcCallMetrics } from './rpc-call-metrics.js';
import { withDeadline } from './with-deadline.js';

/** The [json_rpc] options the client reads. */
export type JsonRpcClientConfig = Pick<
  ConfigSection<'json_rpc'>,
  'port' | 'timeout' | 'use_ssl' | 'cafile' | 'username' | 'password'
>;

export interface JsonRpcConductorClientOptions {
  ring: Pick<ConductorRing, 'hostFor' | 'hostNow' | 'anyHost' | 'invalidate'>;
  config: JsonRpcClientConfig;
  logger: Logger;
  /** Where each call's method, outcome and latency are recorded. */
  metrics: RpcCallMetrics;
  /** Most pooled connections per conductor. */
  maxSocketsPerConductor?: number;
}

/** Errors of the connection itself: the conductor is gone or unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** node:tls's verdicts on a certificate it does not trust (the chain, its dates, its signature). */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
]);

/**
 * A TLS failure said plainly, or undefined for any other error. These are
 * never retried and never taken for a dead conductor: the call fails closed.
 */
export function describeTlsFailure(error: unknown, hostname: string): string | undefined {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `Conductor ${hostname}'s TLS certificate does not name the host it was reached at (${message}); refused.`;
  }
  if (code !== undefined && UNTRUSTED_CERTIFICATE.has(code)) {
    return (
      `Conductor ${hostname}'s TLS certificate is not trusted (${code}: ${message}); refused. ` +
      '[json_rpc]cafile must name the CA that signed it.'
    );
  }
  if (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number/.test(message ?? '')) {
    return `Conductor ${hostname} did not answer with TLS on its JSON-RPC port (${message}); is [json_rpc]use_ssl on for it?`;
  }
  return undefined;
}

/** Where a conductor is reached: request options of node:http(s), computed once per hostname. */
interface ConductorAddress {
  https: boolean;
  host: string;
  port: string;
}

/** A call waiting to go out in a batch, with its own timeout. */
interface BatchedCall {
  request: JSONRPCRequest;
  timeoutMs: number;
}

/** One HTTP exchange with a conductor. */
interface CallState {
  hostname: string;
  address: ConductorAddress;
  timeoutMs: number;
}

/**
 * Methods whose concurrent calls to one conductor travel together as one
 * JSON-RPC batch (an array, answered as an array): the boot path's, which
 * are quick reads. Calls that take locks or start work go alone, so a slow
 * one never holds back the answers of others.
 */
const BATCHED_METHODS: ReadonlySet<RpcMethodName> = new Set(['get_boot_config']);

/**
 * `http(s)://host:port/` for a registered conductor hostname. A conductor on a
 * non-default port registers as `host:port` (or `[v6addr]:port`) and is
 * reached there; a bare name uses [json_rpc]port.
 */
export function conductorUrl(hostname: string, defaultPort: number, useSsl: boolean): URL {
  const scheme = useSsl ? 'https' : 'http';
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostname);
  if (bracketed) return new URL(`${scheme}://[${bracketed[1]}]:${bracketed[2] ?? defaultPort}/`);
  const hostPort = /^([^:]+):(\d+)$/.exec(hostname);
  if (hostPort) return new URL(`${scheme}://${hostPort[1]}:${hostPort[2]}/`);
  // A bare IPv6 address has colons but no port.
  return new URL(`${scheme}://${hostname.includes(':') ? `[${hostname}]` : hostname}:${defaultPort}/`);
}

/**
 * The params a call sends: the caller's, with the request context. Built
 * with Object.assign, not `{ ...params, context }`: on node 20's V8 an
 * object literal that starts with a spread and goes on gets a map of its
 * own every time once warm, and the boot path builds one per request (a
 * new map per request filled the old generation; docs/performance.md).
 * Our params are built by our callers, never parsed from JSON, so no
 * `__proto__` key can reach Object.assign's setter.
 */
export function requestParams<P extends object>(params: P, context: RequestContext): P & { context: RequestContext } {
  return Object.assign({}, params, { context });
}

/**
 * The ConductorClient over JSON-RPC 2.0: the ring names the owner, then one
 * HTTP POST on a pooled keep-alive connection to that conductor. node:http's
 * keep-alive Agent was measured against undici's and was as fast or faster
 * here (see docs/architecture.md), without a dependency. `get_boot_config`
 * calls to one conductor share one POST (a JSON-RPC batch): those of one
 * event-loop turn, and those made while the previous batch is out. In a boot
 * storm that divides the messages on this hop (docs/performance.md).
 */
export class JsonRpcConductorClient implements ConductorClient {
  private readonly agent: http.Agent;
  private readonly authorization: string | undefined;
  private readonly logger: Logger;
  /** Conductor hostname -> address: parsing it per call showed in the boot path's profile. */
  private readonly addresses = new Map<string, ConductorAddress>();
  /** JSON-RPC ids only pair an answer with its request on one connection: a counter does. */
  private nextId = 0;
  /**
   * Batches per conductor. Each call carries its own timeout (the boot path
   * passes what is left of its deadline, different for every request); the
   * exchange waits for the longest, and withDeadline ends each call on time.
   */
  private readonly batches = new Map<string, TurnBatcher<BatchedCall, JSONRPCResponse | undefined>>();

  constructor(private readonly options: JsonRpcConductorClientOptions) {
    const { config } = options;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerConductor ?? 64 };
    this.agent = config.use_ssl
      ? new https.Agent({ ...agentOptions, ...(config.cafile ? { ca: readFileSync(config.cafile) } : {}) })
      : new http.Agent(agentOptions);
    this.authorization =
      config.username !== null
        ? `Basic ${Buffer.from(`${config.username}:${config.password ?? ''}`).toString('base64')}`
        : undefined;
    this.logger = options.logger.child({ component: 'rpc-client' });
  }

  async hostFor(node: NodeRoutingKey): Promise<string> {
    return this.options.ring.hostFor(node);
  }

  callForNode<M extends RpcMethodName>(
    node: NodeRoutingKey,
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const { ring, config } = this.options;
    try {
      const owner = ring.hostNow(node);
      if (owner !== undefined) return this.call(owner, method, params, options);
    } catch (error) {
      // Not an async function, but it fails like one: callers chain on the promise.
      return Promise.reject(error);
    }
    // The rings must be read first: the timeout counts from here and bounds that read too.
    const timeoutMs = options.timeoutMs ?? config.timeout * 1000;
    const started = Date.now();
    return withDeadline(ring.hostFor(node), timeoutMs, 'the conductor hash ring').then((hostname) =>
      this.call(
        hostname,
        method,
        params,
        Object.assign({}, options, { timeoutMs: Math.max(1, timeoutMs - (Date.now() - started)) }),
      ),
    );
  }

  callAny<M extends RpcMethodName>(
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const timeoutMs = options.timeoutMs ?? this.options.config.timeout * 1000;
    const started = Date.now();
    return withDeadline(this.options.ring.anyHost(), timeoutMs, 'the conductor hash ring').then((hostname) =>
      this.call(
        hostname,
        method,
        params,
        Object.assign({}, options, { timeoutMs: Math.max(1, timeoutMs - (Date.now() - started)) }),
      ),
    );
  }

  /** Calls one named conductor (as registered: host or host:port). */
  call<M extends RpcMethodName>(
    hostname: string,
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const { config, metrics } = this.options;
    const started = performance.now();
    const context: RequestContext = { request_id: options.requestId ?? `req-${randomUUID()}` };
    const timeoutMs = options.timeoutMs ?? config.timeout * 1000;
    const request = createJSONRPCRequest(++this.nextId, method, requestParams(params, context));
    const answer = BATCHED_METHODS.has(method)
      ? withDeadline(
          this.batchFor(hostname).get({ request, timeoutMs }),
          timeoutMs,
          `an answer from conductor ${hostname}`,
        )
      : this.exchange(hostname, timeoutMs, [request]).then((answers) => answers[0]);
    // Not an async function: one reaction per call (the boot path makes thousands a second).
    return answer.then(
      (response) => {
        let result: unknown;
        try {
          result = this.resultOf(hostname, method, request, context.request_id, response);
        } catch (error) {
          metrics.observe(method, error, started);
          throw error;
        }
        metrics.observe(method, undefined, started);
        return result as RpcResult<M>;
      },
      (error: unknown) => {
        metrics.observe(method, error, started);
        throw error;
      },
    );
  }

  /** The conductor's answer to `request`: its result, else the domain error it carries is thrown. */
  private resultOf(
    hostname: string,
    method: RpcMethodName,
    request: JSONRPCRequest,
    requestId: string,
    response: JSONRPCResponse | undefined,
  ): unknown {
    if (!response) throw new UnexpectedRpcError(`Conductor ${hostname} did not answer request ${request.id}.`);
    if (!response.error) return response.result;
    const error = fromErrorPayload(response.error.data, response.error.message);
    if (error instanceof UnexpectedRpcError) {
      this.logger.warn('conductor answered with an error outside the allow-list', {
        conductor: hostname,
        method,
        requestId,
        code: response.error.code,
        error: response.error.message,
      });
    }
    throw error;
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  private addressOf(hostname: string): ConductorAddress {
    let address = this.addresses.get(hostname);
    if (!address) {
      const { config } = this.options;
      const url = conductorUrl(hostname, config.port, config.use_ssl);
      // URL keeps IPv6 hosts bracketed; node:http wants them bare.
      address = { https: url.protocol === 'https:', host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port };
      if (this.addresses.size > 1000) this.addresses.clear();
      this.addresses.set(hostname, address);
    }
    return address;
  }

  private batchFor(hostname: string): TurnBatcher<BatchedCall, JSONRPCResponse | undefined> {
    let batch = this.batches.get(hostname);
    if (!batch) {
      batch = new TurnBatcher(
        (calls: BatchedCall[]) =>
          this.exchange(
            hostname,
            calls.reduce((longest, call) => Math.max(longest, call.timeoutMs), 0),
            calls.map((call) => call.request),
          ),
        { maxInFlight: 1 },
      );
      if (this.batches.size > 1000) this.batches.clear();
      this.batches.set(hostname, batch);
    }
    return batch;
  }

  /**
   * One POST carrying one request, or several as a batch; the answers in the
   * order of `requests` (undefined for one the conductor left out). Transport
   * failures are thrown as domain errors, for every request of the exchange.
   */
  private async exchange(
    hostname: string,
    timeoutMs: number,
    requests: JSONRPCRequest[],
  ): Promise<Array<JSONRPCResponse | undefined>> {
    const call: CallState = { hostname, address: this.addressOf(hostname), timeoutMs };
    let answer: JSONRPCResponse | JSONRPCResponse[];
    try {
      answer = await this.post(call, JSON.stringify(requests.length === 1 ? requests[0] : requests));
    } catch (error) {
      throw this.translate(error, call);
    }
    if (!Array.isArray(answer)) {
      if (requests.length === 1 && answer.id === requests[0]?.id) return [answer];
      // An answer to nothing we asked (e.g. a parse error with id null) would leave the calls pending.
      const reason = answer.error ? `: ${answer.error.message}` : '';
      throw new UnexpectedRpcError(`Conductor ${hostname} answered another request id${reason}.`);
    }
    const byId = new Map<unknown, JSONRPCResponse>(answer.map((response) => [response.id, response]));
    return requests.map((request) => byId.get(request.id));
  }

  private translate(error: unknown, call: CallState): BmaasError {
    if (error instanceof RpcTimeout || error instanceof UnexpectedRpcError) return error;
    const tlsFailure = describeTlsFailure(error, call.hostname);
    if (tlsFailure !== undefined) {
      this.logger.warn('JSON-RPC call refused by TLS', { conductor: call.hostname, error: tlsFailure });
      return new UnexpectedRpcError(tlsFailure);
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== undefined && UNREACHABLE.has(code)) {
      // The ring may still list a conductor that died: look again next time.
      this.options.ring.invalidate();
      return new TemporaryFailure(`Conductor ${call.hostname} is not reachable (${code}), please retry.`);
    }
    return new UnexpectedRpcError(`Call to conductor ${call.hostname} failed: ${(error as Error).message}`);
  }

  /** One POST; retried once when a pooled connection turns out to have been closed by the server. */
  private post(call: CallState, body: string): Promise<JSONRPCResponse | JSONRPCResponse[]> {
    return retryOnStaleConnection(() => this.postOnce(call, body));
  }

  private postOnce(call: CallState, body: string): Promise<JSONRPCResponse | JSONRPCResponse[]> {
    const { address } = call;
    const transport = address.https ? https : http;
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    };
    if (this.authorization) headers.authorization = this.authorization;
    return new Promise((resolve, reject) => {
      const options = { host: address.host, port: address.port, path: '/', method: 'POST', agent: this.agent, headers };
      const req = transport.request(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', fail);
        res.on('end', () => {
          clearTimeout(timer);
          try {
            resolve(parseResponse(call.hostname, res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
          } catch (error) {
            reject(error);
          }
        });
      });
      const timer = setTimeout(() => {
        req.destroy(
          new RpcTimeout(
            `Timed out after ${call.timeoutMs / 1000} s waiting for an answer from conductor ${call.hostname}.`,
          ),
        );
      }, call.timeoutMs);
      function fail(error: Error): void {
        clearTimeout(timer);
        reject(markConnectionReuse(error, req));
      }
      req.on('error', fail);
      req.end(body);
    });
  }
}

function parseResponse(hostname: string, status: number, text: string): JSONRPCResponse | JSONRPCResponse[] {
  if (status === 401) throw new UnexpectedRpcError(`Conductor ${hostname} refused our JSON-RPC credentials.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UnexpectedRpcError(`Conductor ${hostname} answered HTTP ${status} without a JSON-RPC body.`);
  }
  const valid = Array.isArray(parsed)
    ? parsed.length > 0 && parsed.every(isJSONRPCResponse)
    : isJSONRPCResponse(parsed);
  if (!valid) {
    throw new UnexpectedRpcError(`Conductor ${hostname} answered HTTP ${status} with something not JSON-RPC.`);
  }
  return parsed as JSONRPCResponse | JSONRPCResponse[];
}
