// The instance image, built (cached) and served to a lab's machines from the test host, with
// the instance_info a node deploys it with.
import { join } from 'node:path';
import { buildInstanceImage, type ImageServer, type InstanceImage, startImageServer } from '@bmaas/lab';
import { E2E_CACHE_DIR } from './lab-suite.js';
import type { ProductLab } from './product-lab.js';

export interface ServedInstanceImage {
  readonly image: InstanceImage;
  readonly server: ImageServer;
  /** instance_info of a node that deploys the image: its URL as the machines see it, and its sha256. */
  readonly instanceInfo: Record<string, unknown>;
}

/** Serves the instance image to the machines of a namespace lab (through lab.reachFromMachines). */
export async function serveInstanceImage(lab: ProductLab): Promise<ServedInstanceImage> {
  const image = await buildInstanceImage(E2E_CACHE_DIR);
  const socket = join(lab.workDir, 'images.sock');
  const server = await startImageServer(socket, image.path);
  const base = await lab.reachFromMachines(socket);
  return {
    image,
    server,
    instanceInfo: {
      image_source: `${base}${server.imagePath}`,
      image_os_hash_algo: 'sha256',
      image_os_hash_value: image.sha256,
      image_disk_format: 'raw',
    },
  };
}
