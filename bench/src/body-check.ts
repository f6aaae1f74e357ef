import type { ApiClient } from '@bmaas/api-client';
import type { EnrolledNode } from './enrolment.js';
import { bootPath } from './macs.js';

export interface BodyCheckResult {
  checked: number;
  /** What was wrong, one line per problem (empty when all is well). */
  failures: string[];
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: await response.text() };
}

/**
 * For each sampled node: the API must answer its MAC with the script of
 * that node (its uuid, and its kernel under the http_url of the conductor
 * owning it), and every static server must answer the very same bytes.
 */
export async function checkBootBodies(options: {
  api: ApiClient;
  sample: readonly EnrolledNode[];
  /** conductor hostname → its [deploy]http_url */
  httpUrlOf: ReadonlyMap<string, string>;
  staticServers: ReadonlyArray<{ name: string; baseUrl: string }>;
}): Promise<BodyCheckResult> {
  const failures: string[] = [];
  for (const node of options.sample) {
    const { conductor } = (
      await options.api.expect<{ conductor: string | null }>(200, 'GET', `/v1/nodes/${node.uuid}?fields=conductor`)
    ).body;
    const httpUrl = conductor ? options.httpUrlOf.get(conductor) : undefined;
    if (!httpUrl) {
      failures.push(`${node.mac}: owner ${conductor} is not a conductor of this stack`);
      continue;
    }
    const answer = await get(`${options.api.baseUrl}${bootPath(node.mac)}`);
    if (answer.status !== 200) {
      failures.push(`${node.mac}: the API answered ${answer.status}`);
      continue;
    }
    if (!answer.body.startsWith('#!ipxe')) failures.push(`${node.mac}: the API's answer is not an iPXE script`);
    if (!answer.body.includes(node.uuid)) failures.push(`${node.mac}: the script does not name node ${node.uuid}`);
    if (!answer.body.includes(`${httpUrl}/${node.uuid}/deploy_kernel`)) {
      failures.push(`${node.mac}: the kernel is not under the owner's http_url ${httpUrl}`);
    }
    for (const server of options.staticServers) {
      const served = await get(`${server.baseUrl}${bootPath(node.mac)}`);
      if (served.status !== 200 || served.body !== answer.body) {
        failures.push(`${node.mac}: ${server.name} answered ${served.status} with other bytes than the API`);
      }
    }
  }
  return { checked: options.sample.length, failures };
}
