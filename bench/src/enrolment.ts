import type { ApiClient } from '@bmaas/api-client';
import { mapLimit } from '@bmaas/common';
import { macForIndex } from './macs.js';

export interface EnrolledNode {
  uuid: string;
  mac: string;
}

/** One way of enrolling: how many nodes (each with its port) in how many seconds. */
export interface EnrolmentRate {
  nodes: number;
  seconds: number;
  /** Nodes (each with its port) per second. */
  nodesPerSecond: number;
  /** CPU seconds of each process group meanwhile (`api`, `postgres`, `bench`), when measured. */
  cpuSeconds?: Record<string, number>;
}

export interface EnrolmentResult {
  /** Every node, per-request ones first (MAC i is node i's). */
  nodes: EnrolledNode[];
  /** POST /v1/nodes then POST /v1/ports per node, as the `baremetal` CLI does (null when no node went that way). */
  perRequest: (EnrolmentRate & { concurrency: number }) | null;
  /** POST /v1/nodes/bulk (null when no node went that way). */
  bulk: (EnrolmentRate & { batchNodes: number; concurrency: number }) | null;
}

/** driver_info images of every node: small local files, hard-linked into the owner's http root at deploy. */
export interface DeployImages {
  kernel: string;
  ramdisk: string;
}

export interface EnrolmentOptions {
  /** Nodes enrolled one request per node and one per port, before the others go in bulk. */
  perRequestNodes: number;
  /** Requests in flight on the per-request path. */
  concurrency: number;
  /** Nodes per POST /v1/nodes/bulk. */
  bulkBatchNodes: number;
  /** POST /v1/nodes/bulk requests in flight. */
  bulkConcurrency: number;
  images: DeployImages;
  progress: (line: string) => void;
  /** Called as each path starts; the function it returns as that path ends, with what it measured meanwhile. */
  measure?: (path: 'per-request' | 'bulk') => () => Record<string, number> | undefined;
}

/** A whole-disk image by URL and checksum, as the direct deploy interface requires. */
const BENCH_INSTANCE_IMAGE = {
  image_source: 'http://127.0.0.1:9/bench-image.raw',
  image_os_hash_algo: 'sha256',
  image_os_hash_value: '0'.repeat(64),
};

/** The create body of node `index`: the same for both paths. */
function nodeBody(index: number, images: DeployImages): Record<string, unknown> {
  return {
    name: `bench-${String(index).padStart(7, '0')}`,
    driver: 'fake-hardware',
    boot_interface: 'ipxe',
    deploy_interface: 'direct',
    power_interface: 'fake',
    management_interface: 'fake',
    driver_info: { deploy_kernel: images.kernel, deploy_ramdisk: images.ramdisk },
    // what deploy validates; nothing ever downloads it (the nodes stop in wait call-back)
    instance_info: BENCH_INSTANCE_IMAGE,
  };
}

const rate = (nodes: number, started: number, cpuSeconds: Record<string, number> | undefined): EnrolmentRate => {
  const seconds = (performance.now() - started) / 1000;
  return { nodes, seconds, nodesPerSecond: nodes / seconds, ...(cpuSeconds ? { cpuSeconds } : {}) };
};

/**
 * Creates `count` nodes through the REST API, each with its one port: the
 * first `perRequestNodes` as an operator's script or the `baremetal` CLI does
 * (POST /v1/nodes, then POST /v1/ports; `concurrency` nodes at a time), the
 * rest through POST /v1/nodes/bulk (`bulkBatchNodes` a request,
 * `bulkConcurrency` requests at a time). Each path is timed on its own.
 */
export async function enrolNodes(api: ApiClient, count: number, options: EnrolmentOptions): Promise<EnrolmentResult> {
  const nodes: EnrolledNode[] = new Array(count);
  const perRequestNodes = Math.min(count, options.perRequestNodes);

  let perRequest: EnrolmentResult['perRequest'] = null;
  if (perRequestNodes > 0) {
    const stop = options.measure?.('per-request');
    const started = performance.now();
    let done = 0;
    await mapLimit(nodes.slice(0, perRequestNodes), options.concurrency, async (_unused, index) => {
      const node = (await api.expect<{ uuid: string }>(201, 'POST', '/v1/nodes', nodeBody(index, options.images))).body;
      const mac = macForIndex(index);
      await api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: node.uuid });
      nodes[index] = { uuid: node.uuid, mac };
      if (++done % 500 === 0) options.progress(`enrolled ${done}/${perRequestNodes} per request`);
    });
    const measured = stop?.();
    perRequest = { ...rate(perRequestNodes, started, measured), concurrency: options.concurrency };
  }

  let bulk: EnrolmentResult['bulk'] = null;
  const bulkNodes = count - perRequestNodes;
  if (bulkNodes > 0) {
    const batches: number[] = [];
    for (let first = perRequestNodes; first < count; first += options.bulkBatchNodes) batches.push(first);
    const stop = options.measure?.('bulk');
    const started = performance.now();
    let done = 0;
    await mapLimit(batches, options.bulkConcurrency, async (first) => {
      const indices = Array.from({ length: Math.min(options.bulkBatchNodes, count - first) }, (_, i) => first + i);
      const body = {
        nodes: indices.map((index) => ({
          ...nodeBody(index, options.images),
          ports: [{ address: macForIndex(index) }],
        })),
      };
      type Created = { nodes: Array<{ uuid: string; ports: Array<{ address: string }> }> };
      const created = (await api.expect<Created>(201, 'POST', '/v1/nodes/bulk', body)).body;
      indices.forEach((index, i) => {
        const node = created.nodes[i];
        if (node?.ports[0]?.address !== macForIndex(index)) {
          throw new Error(`POST /v1/nodes/bulk: node ${i} of the batch from ${first} answered without its port`);
        }
        nodes[index] = { uuid: node.uuid, mac: macForIndex(index) };
      });
      done += indices.length;
      options.progress(`enrolled ${done}/${bulkNodes} in bulk`);
    });
    const measured = stop?.();
    bulk = {
      ...rate(bulkNodes, started, measured),
      batchNodes: options.bulkBatchNodes,
      concurrency: options.bulkConcurrency,
    };
  }
  return { nodes, perRequest, bulk };
}
