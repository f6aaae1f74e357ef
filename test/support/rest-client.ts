import { waitFor } from '@bmaas/common';
import { UNFETCHED_INSTANCE_INFO } from './instance-image.js';

/**
 * A small client of our REST API for multi-process tests: JSON in and out,
 * the microversion the `baremetal` CLI asks for, answers kept whole
 * (status, headers, body) so tests can check what Ironic users would see.
 */

/** The version the `baremetal` CLI (python-ironicclient 5.x) asks for. */
export const CLI_API_VERSION = '1.78';

export interface RestAnswer<T = unknown> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is empty or not JSON. */
  body: T;
  text: string;
}

/** The inner fault of Ironic's error body (`error_message` is a JSON document encoded as a string). */
export interface IronicFault {
  faultcode: 'Client' | 'Server';
  faultstring: string;
  debuginfo: null;
}

export type NodeAnswer = Record<string, unknown> & {
  uuid: string;
  provision_state: string;
  target_provision_state: string | null;
  conductor: string | null;
  reservation: string | null;
  last_error: string | null;
};

export function ironicFault(answer: RestAnswer): IronicFault {
  const message = (answer.body as { error_message?: unknown } | undefined)?.error_message;
  if (typeof message !== 'string') throw new Error(`not an Ironic error body (${answer.status}): ${answer.text}`);
  return JSON.parse(message) as IronicFault;
}

export class RestClient {
  constructor(
    readonly baseUrl: string,
    private readonly version = CLI_API_VERSION,
    /** Sent with every request (e.g. Authorization when the API uses http_basic). */
    private readonly defaultHeaders: Record<string, string> = {},
  ) {}

  async request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<RestAnswer<T>> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        Accept: 'application/json',
        'X-OpenStack-Ironic-API-Version': this.version,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...this.defaultHeaders,
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  /** POST /v1/nodes; throws unless 201. */
  async createNode(fields: Record<string, unknown>): Promise<NodeAnswer> {
    const answer = await this.request<NodeAnswer>('POST', '/v1/nodes', fields);
    if (answer.status !== 201) throw new Error(`node create answered ${answer.status}: ${answer.text}`);
    return answer.body;
  }

  /** POST /v1/ports; throws unless 201. */
  async createPort(nodeUuid: string, address: string): Promise<Record<string, unknown>> {
    const answer = await this.request<Record<string, unknown>>('POST', '/v1/ports', {
      node_uuid: nodeUuid,
      address,
    });
    if (answer.status !== 201) throw new Error(`port create answered ${answer.status}: ${answer.text}`);
    return answer.body;
  }

  /** GET /v1/nodes/{ident}; throws unless 200. */
  async node(ident: string): Promise<NodeAnswer> {
    const answer = await this.request<NodeAnswer>('GET', `/v1/nodes/${ident}`);
    if (answer.status !== 200) throw new Error(`node show answered ${answer.status}: ${answer.text}`);
    return answer.body;
  }

  /** PUT /v1/nodes/{ident}/states/provision, whatever the answer. */
  provision(ident: string, target: string, extra: Record<string, unknown> = {}): Promise<RestAnswer> {
    return this.request('PUT', `/v1/nodes/${ident}/states/provision`, { target, ...extra });
  }

  /** PUT /v1/nodes/{ident}/states/power, whatever the answer. */
  power(ident: string, target: string): Promise<RestAnswer> {
    return this.request('PUT', `/v1/nodes/${ident}/states/power`, { target });
  }

  /**
   * Polls GET /v1/nodes/{ident} until the node is in `state` with its lock
   * released (the conductor finished with it); bounded by timeoutMs.
   */
  settled(ident: string, state: string, timeoutMs = 15_000): Promise<NodeAnswer> {
    let last: NodeAnswer | undefined;
    return waitFor(
      `node ${ident} to settle in "${state}"`,
      async () => {
        last = await this.node(ident);
        return last.provision_state === state && last.reservation === null ? last : undefined;
      },
      {
        timeoutMs,
        intervalMs: 50,
        describe: () =>
          `now "${last?.provision_state}" (target ${last?.target_provision_state}, reservation ${last?.reservation}, last_error ${last?.last_error})`,
      },
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

  /**
   * A fake-hardware node that boots by iPXE and deploys with `direct` (these deploy kernel
   * and ramdisk files, an image never fetched), with its port, in "wait call-back": its
   * owner has rendered its script. For the boot path's suites.
   */
  async ipxeNodeWaitingCallBack(
    name: string,
    mac: string,
    images: { kernel: string; ramdisk: string },
    timeoutMs?: number,
  ): Promise<{ uuid: string; macHyphens: string }> {
    const node = await this.createNode({
      driver: 'fake-hardware',
      name,
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      power_interface: 'fake',
      management_interface: 'fake',
      driver_info: { deploy_kernel: images.kernel, deploy_ramdisk: images.ramdisk },
      instance_info: UNFETCHED_INSTANCE_INFO,
    });
    await this.createPort(node.uuid, mac);
    await this.deployToWaitCallBack(node.uuid, timeoutMs);
    return { uuid: node.uuid, macHyphens: mac.replaceAll(':', '-') };
  }
}
