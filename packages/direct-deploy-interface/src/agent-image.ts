import { join } from 'node:path';
import { InvalidParameterValue, type JsonObject } from '@bmaas/common';
import type { CachedInstanceImage, Task } from '@bmaas/driver-api';
import type { DirectDeployDeps } from './direct-deploy.js';
import { imageHashOf, imageInfoOf, instanceImageOf } from './image-info.js';
import { InstanceDeployFailure } from './written-image.js';

/** The directory of http_root where agents download their images with image_download_source local, as upstream. */
const AGENT_IMAGES = 'agent_images';
/** disk_format values for what the cache found to be a raw disk. */
const RAW_DISK_FORMATS: ReadonlySet<string> = new Set(['raw', 'gpt', 'mbr']);

/**
 * image_info for write_image. With image_download_source http the agent
 * gets the image_source URL. With local the conductor's instance image
 * cache downloads the image (once for every node asking), verifies and
 * inspects it and converts it to raw with [DEFAULT]force_raw_images; the
 * agent gets the conductor's URL of it (http_url/agent_images/<uuid>), its
 * format and SHA-256, and the conductor knows its virtual size.
 */
export async function imageForAgent(
  task: Task,
  deps: Pick<DirectDeployDeps, 'config' | 'instanceImages'>,
): Promise<{ imageInfo: JsonObject; virtualSize?: number }> {
  const { agent, deploy } = deps.config;
  const image = instanceImageOf(task.node, agent.image_download_source);
  const imageInfo = imageInfoOf(task.node, image, { streamRawImages: agent.stream_raw_images });
  if (image.downloadSource === 'http') return { imageInfo };
  const { instanceImages } = deps;
  if (!instanceImages)
    throw new InvalidParameterValue('image_download_source local: this conductor has no image cache.');
  if (!deploy.http_url) {
    throw new InvalidParameterValue(
      'image_download_source local needs [deploy]http_url, where agents reach this conductor.',
    );
  }
  let cached: CachedInstanceImage;
  try {
    cached = await instanceImages.get({
      url: image.source,
      declaredFormat: image.diskFormat,
      hash: imageHashOf(image),
    });
    await instanceImages.publish(cached, agentImagePath(task, deploy));
  } catch (error) {
    throw new InstanceDeployFailure(`Deploy step deploy.write_image failed: ${(error as Error).message}`);
  }
  const { checksum: _checksum, ...rest } = imageInfo;
  return {
    imageInfo: {
      ...rest,
      urls: [`${deploy.http_url.replace(/\/+$/, '')}/${AGENT_IMAGES}/${task.node.uuid}`],
      disk_format: RAW_DISK_FORMATS.has(cached.format) ? 'raw' : cached.format,
      os_hash_algo: 'sha256',
      os_hash_value: cached.sha256,
    },
    virtualSize: cached.virtualSize,
  };
}

/** Where a node's image is served from with image_download_source local (a hard link into the cache). */
export function agentImagePath(task: Task, deploy: { readonly http_root: string }): string {
  return join(deploy.http_root, AGENT_IMAGES, task.node.uuid);
}
