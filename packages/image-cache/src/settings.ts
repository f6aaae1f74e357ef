import { dirname, join, resolve } from 'node:path';
import type { BmaasConfig } from '@bmaas/common';

/** The instance image cache's slice of the configuration. */
export interface InstanceImageCacheSettings {
  /** Its directory ([conductor]instance_image_cache_path, else master_images beside [deploy]http_root). */
  path: string;
  /** [conductor]instance_image_cache_size, in bytes. */
  maxBytes: number;
  /** [conductor]image_download_concurrency: downloads and conversions at once. */
  concurrency: number;
  /** [DEFAULT]force_raw_images: convert non-raw images to raw before serving them. */
  forceRaw: boolean;
  /** [conductor]permitted_image_formats. */
  permittedFormats: readonly string[];
  /** Longest one download may take, in milliseconds. */
  downloadTimeoutMs: number;
}

/** A download of an instance image may take this long before it is given up (the node's lock is held meanwhile). */
const DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;

export function instanceImageCacheSettingsOf(
  config: Pick<BmaasConfig, 'DEFAULT' | 'conductor' | 'deploy'>,
): InstanceImageCacheSettings {
  const { conductor } = config;
  return {
    path: conductor.instance_image_cache_path ?? join(dirname(resolve(config.deploy.http_root)), 'master_images'),
    maxBytes: conductor.instance_image_cache_size * 1024 * 1024,
    concurrency: conductor.image_download_concurrency,
    forceRaw: config.DEFAULT.force_raw_images,
    permittedFormats: conductor.permitted_image_formats,
    downloadTimeoutMs: DOWNLOAD_TIMEOUT_MS,
  };
}
