// A REST client of the product's API, over TCP or over the Unix socket that leads into a lab
// namespace. Speaks as the `baremetal` CLI does (JSON, microversion 1.78).
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where the API is: a loopback port, or a Unix socket relayed to it. */
export type ApiEndpoint = { host: string; port: number } | { socketPath: string };

export interface ApiAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: answers are JSON of many shapes
  body: any;
}

/** Stable states a provision action ends in; reaching another failed or error state ends a wait early. */
const FAILED_STATE = /failed$|^error$/;

export class ApiClient {
  constructor(
    private readonly endpoint: ApiEndpoint,
    private readonly version = '1.78',
    /** Sent with every request, e.g. the Authorization of an http_basic API. */
    private readonly defaultHeaders: Record<string, string> = {},
  ) {}

  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          ...this.endpoint,
          method,
          path,
          headers: {
            Accept: 'application/json',
            'X-OpenStack-Ironic-API-Version': this.version,
            ...this.defaultHeaders,
            ...(text === undefined ? {} : { 'Content-Type': 'application/json' }),
            ...headers,
          },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString();
            let parsed: unknown = raw;
            try {
              parsed = raw ? JSON.parse(raw) : undefined;
            } catch {
              // not JSON: keep the text
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(text);
    });
  }

  /** Like request, but throws unless the status is the expected one. */
  async expect(status: number, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
    const answer = await this.request(method, path, body);
    if (answer.status !== status) {
      throw new Error(`${method} ${path}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    return answer;
  }

  /** PUT …/states/provision and wait (bounded) for `until`; fails at once on a failed state. */
  async provision(
    nodeUuid: string,
    target: string,
    until: string,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    await this.expect(202, 'PUT', `/v1/nodes/${nodeUuid}/states/provision`, { target });
    return this.waitForProvisionState(nodeUuid, until, timeoutMs);
  }

  /** Polls the node until a power change has settled at `state` (no target left). */
  async waitForPowerState(nodeUuid: string, state: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const node = (await this.expect(200, 'GET', `/v1/nodes/${nodeUuid}`)).body;
      if (node.power_state === state && node.target_power_state === null) return node;
      if (Date.now() >= deadline) {
        throw new Error(
          `node ${nodeUuid}: power ${node.power_state} (target ${node.target_power_state}, last error ${node.last_error}) after ${timeoutMs} ms`,
        );
      }
      await sleep(250);
    }
  }

  /** Polls the node (its state lives in the database) until it reaches `state`. */
  async waitForProvisionState(nodeUuid: string, state: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    let node: Record<string, unknown> = {};
    for (;;) {
      node = (await this.expect(200, 'GET', `/v1/nodes/${nodeUuid}`)).body;
      if (node.provision_state === state) return node;
      if (FAILED_STATE.test(String(node.provision_state)) && !FAILED_STATE.test(state)) {
        throw new Error(
          `node ${nodeUuid} went to "${node.provision_state}" waiting for "${state}": ${node.last_error}`,
        );
      }
      if (Date.now() >= deadline) {
        throw new Error(
          `node ${nodeUuid} still "${node.provision_state}" (target ${node.target_provision_state}, last error ${node.last_error}) after ${timeoutMs} ms waiting for "${state}"`,
        );
      }
      await sleep(250);
    }
  }
}
