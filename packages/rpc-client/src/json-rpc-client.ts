import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import {
  type BmaasError,
  type ConfigSection,
  fromErrorPayload,
  type Logger,
  RpcTimeout,
  TemporaryFailure,
  UnexpectedRpcError,
} from '@bmaas/common';
import {
  createJSONRPCRequest,
  isJSONRPCResponse,
  JSONRPCClient,
  type JSONRPCRequest,
  type JSONRPCResponse,
} from 'json-rpc-2.0';
import type { ConductorCallOptions, ConductorClient } from './client.js';
import type { RequestContext, RpcMethodName, RpcParams, RpcResult } from './methods.js';
import type { ConductorRing, NodeRoutingKey } from './ring.js';

/** The [json_rpc] options the client reads. */
export type JsonRpcClientConfig = Pick<
  ConfigSection<'json_rpc'>,
  'port' | 'timeout' | 'use_ssl' | 'cafile' | 'username' | 'password'
>;

export interface JsonRpcConductorClientOptions {
  ring: Pick<ConductorRing, 'hostFor' | 'invalidate'>;
  config: JsonRpcClientConfig;
  logger: Logger;
  /** Most pooled connections per conductor. */
  maxSocketsPerConductor?: number;
}

/** Errors of the connection itself: the conductor is gone or unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** The state of one call, shared between the JSON-RPC client and its transport. */
interface CallState {
  hostname: string;
  url: URL;
  timeoutMs: number;
  /** The transport's own error, rethrown as is (the library would flatten it). */
  failure?: BmaasError;
}

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
 * The ConductorClient over JSON-RPC 2.0: the ring names the owner, then one
 * HTTP POST on a pooled keep-alive connection to that conductor. node:http's
 * keep-alive Agent was measured against undici's and was as fast or faster
 * here (see docs/architecture.md), without a dependency.
 */
export class JsonRpcConductorClient implements ConductorClient {
  private readonly agent: http.Agent;
  private readonly rpc: JSONRPCClient<CallState>;
  private readonly authorization: string | undefined;
  private readonly logger: Logger;

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
    this.rpc = new JSONRPCClient<CallState>((payload, call) => this.send(payload, call));
    this.logger = options.logger.child({ component: 'rpc-client' });
  }

  async hostFor(node: NodeRoutingKey): Promise<string> {
    return this.options.ring.hostFor(node);
  }

  async callForNode<M extends RpcMethodName>(
    node: NodeRoutingKey,
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const hostname = await this.options.ring.hostFor(node);
    return this.call(hostname, method, params, options);
  }

  /** Calls one named conductor (as registered: host or host:port). */
  async call<M extends RpcMethodName>(
    hostname: string,
    method: M,
    params: RpcParams<M>,
    options: ConductorCallOptions = {},
  ): Promise<RpcResult<M>> {
    const { config } = this.options;
    const context: RequestContext = { request_id: options.requestId ?? `req-${randomUUID()}` };
    const call: CallState = {
      hostname,
      url: conductorUrl(hostname, config.port, config.use_ssl),
      timeoutMs: options.timeoutMs ?? config.timeout * 1000,
    };
    const request = createJSONRPCRequest(randomUUID(), method, { ...params, context });
    const response = await this.rpc.requestAdvanced(request, call);
    if (call.failure) throw call.failure;
    if (response.error) {
      const error = fromErrorPayload(response.error.data, response.error.message);
      if (error instanceof UnexpectedRpcError) {
        this.logger.warn('conductor answered with an error outside the allow-list', {
          conductor: hostname,
          method,
          requestId: context.request_id,
          code: response.error.code,
          error: response.error.message,
        });
      }
      throw error;
    }
    return response.result as RpcResult<M>;
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  private async send(payload: JSONRPCRequest, call: CallState): Promise<void> {
    try {
      const response = await this.post(call, JSON.stringify(payload));
      if (response.id !== payload.id) {
        // An answer to nothing we asked (e.g. a parse error with id null) would leave the call pending.
        const reason = response.error ? `: ${response.error.message}` : '';
        throw new UnexpectedRpcError(`Conductor ${call.hostname} answered another request id${reason}.`);
      }
      this.rpc.receive(response);
    } catch (error) {
      call.failure = this.translate(error, call);
      throw call.failure;
    }
  }

  private translate(error: unknown, call: CallState): BmaasError {
    if (error instanceof RpcTimeout || error instanceof UnexpectedRpcError) return error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== undefined && UNREACHABLE.has(code)) {
      // The ring may still list a conductor that died: look again next time.
      this.options.ring.invalidate();
      return new TemporaryFailure(`Conductor ${call.hostname} is not reachable (${code}), please retry.`);
    }
    return new UnexpectedRpcError(`Call to conductor ${call.hostname} failed: ${(error as Error).message}`);
  }

  /** One POST; retried once when a pooled connection turns out to have been closed by the server. */
  private async post(call: CallState, body: string): Promise<JSONRPCResponse> {
    try {
      return await this.postOnce(call, body);
    } catch (error) {
      if (
        (error as { reusedSocket?: boolean }).reusedSocket &&
        (error as NodeJS.ErrnoException).code === 'ECONNRESET'
      ) {
        return this.postOnce(call, body);
      }
      throw error;
    }
  }

  private postOnce(call: CallState, body: string): Promise<JSONRPCResponse> {
    const transport = call.url.protocol === 'https:' ? https : http;
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    };
    if (this.authorization) headers.authorization = this.authorization;
    return new Promise((resolve, reject) => {
      const req = transport.request(call.url, { method: 'POST', agent: this.agent, headers }, (res) => {
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
        Object.assign(error, { reusedSocket: req.reusedSocket });
        reject(error);
      }
      req.on('error', fail);
      req.end(body);
    });
  }
}

function parseResponse(hostname: string, status: number, text: string): JSONRPCResponse {
  if (status === 401) throw new UnexpectedRpcError(`Conductor ${hostname} refused our JSON-RPC credentials.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UnexpectedRpcError(`Conductor ${hostname} answered HTTP ${status} without a JSON-RPC body.`);
  }
  if (!isJSONRPCResponse(parsed)) {
    throw new UnexpectedRpcError(`Conductor ${hostname} answered HTTP ${status} with something not JSON-RPC.`);
  }
  return parsed;
}
