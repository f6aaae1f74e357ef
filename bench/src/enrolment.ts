import { type ApiClient, forEachConcurrently } from './api-client.js';
import { macForIndex } from './macs.js';

export interface EnrolledNode {
  uuid: string;
  mac: string;
}

export interface EnrolmentResult {
  nodes: EnrolledNode[];
  seconds: number;
  /** Nodes (each with its port) per second. */
  nodesPerSecond: number;
}

/** driver_info images of every node: small local files, hard-linked into the owner's http root at deploy. */
export interface DeployImages {
  kernel: string;
  ramdisk: string;
}

/** A whole-disk image by URL and checksum, as the direct deploy interface requires. */
const BENCH_INSTANCE_IMAGE = {
  image_source: 'http://127.0.0.1:9/bench-image.raw',
  image_os_hash_algo: 'sha256',
  image_os_hash_value: '0'.repeat(64),
};

/**
 * Creates `count` nodes through the REST API, each followed by its one port,
 * `concurrency` nodes at a time: what an operator's enrolment script does.
 */
export async function enrolNodes(
  api: ApiClient,
  count: number,
  options: { concurrency: number; images: DeployImages; progress: (done: number) => void },
): Promise<EnrolmentResult> {
  const nodes: EnrolledNode[] = new Array(count);
  const started = performance.now();
  let done = 0;
  await forEachConcurrently(nodes, options.concurrency, async (_unused, index) => {
    const node = await api.expect<{ uuid: string }>(201, 'POST', '/v1/nodes', {
      name: `bench-${String(index).padStart(7, '0')}`,
      driver: 'fake-hardware',
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      power_interface: 'fake',
      management_interface: 'fake',
      driver_info: { deploy_kernel: options.images.kernel, deploy_ramdisk: options.images.ramdisk },
      // what deploy validates; nothing ever downloads it (the nodes stop in wait call-back)
      instance_info: BENCH_INSTANCE_IMAGE,
    });
    const mac = macForIndex(index);
    await api.expect(201, 'POST', '/v1/ports', { address: mac, node_uuid: node.uuid });
    nodes[index] = { uuid: node.uuid, mac };
    if (++done % 500 === 0) options.progress(done);
  });
  const seconds = (performance.now() - started) / 1000;
  return { nodes, seconds, nodesPerSecond: count / seconds };
}
