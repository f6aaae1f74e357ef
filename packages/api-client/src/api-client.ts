import http from 'node:http';
import { markConnectionReuse, retryOnStaleConnection, waitFor } from '@bmaas/common';
import { ApiError, describeFault, ironicFault } from './ironic-fault.js';

/** The version the `baremetal` CLI (python-ironicclient 5.x) asks for: the default of every client. */
export const CLI_API_VERSION = '1.78';

/** Where the API is: its base URL (`http://127.0.0.1:6385`), or a Unix socket relayed to it (a lab namespace). */
export type ApiEndpoint = string | { socketPath: string };

export interface ApiClientOptions {
  /** X-OpenStack-Ironic-API-Version of every request (default CLI_API_VERSION; 'latest' for the newest). */
  version?: string;
  /** Credentials of an API whose [DEFAULT]auth_strategy is http_basic. */
  basicAuth?: { username: string; password: string };
  /** Sent with every request, after the above. */
  headers?: Record<string, string>;
  /** Bound on each request (default 30 s). */
  timeoutMs?: number;
  /** Requests in flight at most; the others queue (default 64). */
  maxSockets?: number;
}

/** A JSON answer of any shape, typed by the caller when it cares. */
// biome-ignore lint/suspicious/noExplicitAny: answers are JSON of many shapes
export type Json = any;

export interface ApiAnswer<T = Json> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is empty or not JSON. */
  body: T;
  text: string;
}

/** A node as the API shows it: the fields the clients wait on, and the rest. */
export type NodeAnswer = Record<string, Json> & {
  uuid: string;
  provision_state: string;
  target_provision_state: string | null;
  power_state: string | null;
  target_power_state: string | null;
  conductor: string | null;
  reservation: string | null;
  last_error: string | null;
};

/** Stable states a provision action ends in; reaching another failed or error state ends a wait early. */
const FAILED_STATE = /failed$|^error$/;

function headersOf(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    headers.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
  }
  return headers;
}

/**
 * The one client of the REST API, for the tests, the bench and the lab: JSON in and out, the
 * microversion header, http_basic credentials, answers kept whole (status, headers, body, text)
 * so tests can check what Ironic users would see, and `expect` turning any other answer into an
 * ApiError carrying Ironic's faultstring. Over keep-alive node:http connections (fetch costs
 * more CPU per request, and the bench shares the cores with what it measures), by TCP or
 * through a Unix socket.
 */
export class ApiClient {
  /** The base URL requests go to (for a Unix socket, `http://localhost`). */
  readonly baseUrl: string;
  private readonly agent: http.Agent;
  private readonly target: { host: string; port: number } | { socketPath: string };
  private readonly defaultHeaders: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(endpoint: ApiEndpoint, options: ApiClientOptions = {}) {
    if (typeof endpoint === 'string') {
      const url = new URL(endpoint);
      this.target = { host: url.hostname, port: Number(url.port || 80) };
      this.baseUrl = url.origin;
    } else {
      this.target = { socketPath: endpoint.socketPath };
      this.baseUrl = 'http://localhost';
    }
    this.agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 64 });
    const auth = options.basicAuth;
    this.defaultHeaders = {
      Accept: 'application/json',
      'X-OpenStack-Ironic-API-Version': options.version ?? CLI_API_VERSION,
      ...(auth
        ? { Authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` }
        : {}),
      ...options.headers,
    };
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * One request, whatever the answer. Sent again once when a pooled connection turns out to
   * have been closed by the API meanwhile (its keep-alive timeout ran out between two requests).
   */
  request<T = Json>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer<T>> {
    return retryOnStaleConnection(() => this.requestOnce<T>(method, path, body, headers));
  }

  private requestOnce<T>(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<ApiAnswer<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const sent: http.OutgoingHttpHeaders = { ...this.defaultHeaders, ...headers };
    if (payload !== undefined) {
      if (!Object.keys(sent).some((name) => name.toLowerCase() === 'content-type'))
        sent['Content-Type'] = 'application/json';
      sent['Content-Length'] = Buffer.byteLength(payload);
    }
    return new Promise((resolve, reject) => {
      const req = http.request({ ...this.target, method, path, headers: sent, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: parsed as T, text });
        });
      });
      req.setTimeout(this.timeoutMs, () =>
        req.destroy(new Error(`${method} ${path}: no answer within ${this.timeoutMs / 1000} s`)),
      );
      req.on('error', (error) => reject(markConnectionReuse(error, req)));
      req.end(payload);
    });
  }

  /** The request, which must answer `status`; otherwise an ApiError with the API's faultstring. */
  async expect<T = Json>(status: number, method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
    const answer = await this.request<T>(method, path, body);
    if (answer.status !== status) {
      let fault: ReturnType<typeof ironicFault> | undefined;
      try {
        fault = ironicFault(answer);
      } catch {
        fault = undefined;
      }
      const message = `${method} ${path}: expected ${status}, got ${answer.status}: ${describeFault(answer)}`;
      throw new ApiError(answer.status, message, fault);
    }
    return answer;
  }

  /** Every item of a paged list (following `next`). */
  async listAll<T>(path: string, key: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined = path;
    while (next) {
      const page: Record<string, unknown> = (await this.expect<Record<string, unknown>>(200, 'GET', next)).body;
      items.push(...((page[key] as T[]) ?? []));
      next = typeof page.next === 'string' ? new URL(page.next).pathname + new URL(page.next).search : undefined;
    }
    return items;
  }

  /** POST /v1/nodes; throws unless 201. */
  async createNode(fields: Record<string, unknown>): Promise<NodeAnswer> {
    return (await this.expect<NodeAnswer>(201, 'POST', '/v1/nodes', fields)).body;
  }

  /** POST /v1/ports; throws unless 201. */
  async createPort(nodeUuid: string, address: string): Promise<Record<string, unknown>> {
    return (await this.expect(201, 'POST', '/v1/ports', { node_uuid: nodeUuid, address })).body;
  }

  /** GET /v1/nodes/{ident}; throws unless 200. */
  async node(ident: string): Promise<NodeAnswer> {
    return (await this.expect<NodeAnswer>(200, 'GET', `/v1/nodes/${ident}`)).body;
  }

  /** PUT /v1/nodes/{ident}/states/provision, whatever the answer. */
  provision(ident: string, target: string, extra: Record<string, unknown> = {}): Promise<ApiAnswer> {
    return this.request('PUT', `/v1/nodes/${ident}/states/provision`, { target, ...extra });
  }

  /** PUT /v1/nodes/{ident}/states/power, whatever the answer. */
  power(ident: string, target: string): Promise<ApiAnswer> {
    return this.request('PUT', `/v1/nodes/${ident}/states/power`, { target });
  }

  /** PUT …/states/provision (must be accepted), then waitForProvisionState(`until`). */
  async provisionAndWait(ident: string, target: string, until: string, timeoutMs: number): Promise<NodeAnswer> {
    await this.expect(202, 'PUT', `/v1/nodes/${ident}/states/provision`, { target });
    return this.waitForProvisionState(ident, until, timeoutMs);
  }

  /**
   * Polls the node until it is in `state`; fails at once when it reaches a failed state
   * instead (unless `state` is one).
   */
  waitForProvisionState(ident: string, state: string, timeoutMs: number): Promise<NodeAnswer> {
    return this.waitForNode(ident, `"${state}"`, timeoutMs, 250, (node) => {
      if (node.provision_state === state) return true;
      if (FAILED_STATE.test(node.provision_state) && !FAILED_STATE.test(state)) {
        throw new Error(`node ${ident} went to "${node.provision_state}" waiting for "${state}": ${node.last_error}`);
      }
      return false;
    });
  }

  /** Polls the node until it is in `state` with its lock released (the conductor finished with it). */
  settled(ident: string, state: string, timeoutMs = 15_000): Promise<NodeAnswer> {
    return this.waitForNode(
      ident,
      `to settle in "${state}"`,
      timeoutMs,
      50,
      (node) => node.provision_state === state && node.reservation === null,
    );
  }

  /** Polls the node until a power change has settled at `state` (no target left). */
  waitForPowerState(ident: string, state: string, timeoutMs: number): Promise<NodeAnswer> {
    return this.waitForNode(
      ident,
      `power "${state}"`,
      timeoutMs,
      250,
      (node) => node.power_state === state && node.target_power_state === null,
    );
  }

  /**
   * manage, provide, then deploy: the node ends in "wait call-back", waiting for its machine
   * to network-boot. Throws unless each action is accepted (202) and settles in time.
   */
  async deployToWaitCallBack(ident: string, timeoutMs = 20_000): Promise<void> {
    for (const [target, state] of [
      ['manage', 'manageable'],
      ['provide', 'available'],
      ['active', 'wait call-back'],
    ] as const) {
      const answer = await this.provision(ident, target);
      if (answer.status !== 202) throw new Error(`${target} of ${ident} answered ${answer.status}: ${answer.text}`);
      await this.settled(ident, state, timeoutMs);
    }
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Polls the node until `done` says so; the timeout's message names `what` and the node's last
   * states. `done` may throw to end the wait at once (a state that cannot lead to the one awaited).
   */
  waitForNode(
    ident: string,
    what: string,
    timeoutMs: number,
    intervalMs: number,
    done: (node: NodeAnswer) => boolean,
  ): Promise<NodeAnswer> {
    let last: NodeAnswer | undefined;
    return waitFor(
      `node ${ident} ${what}`,
      async () => {
        last = await this.node(ident);
        return done(last) ? last : undefined;
      },
      {
        timeoutMs,
        intervalMs,
        describe: () =>
          `now "${last?.provision_state}" (target ${last?.target_provision_state}, power ${last?.power_state}, reservation ${last?.reservation}, last_error ${last?.last_error})`,
      },
    );
  }
}
