import type { Logger, NodeRecord } from '@bmaas/common';
import { MissingParameterValue } from '@bmaas/common';
import type { RamdiskMode } from '@bmaas/driver-api';
import {
  checkLocalImageAllowed,
  type ImageSource,
  parseImageSource,
  placeBootImage,
  removeBootImage,
} from './boot-images.js';
import { BOOT_IMAGE_NAMES, type BootImageName, type HttpRootLayout } from './http-root-layout.js';

/** The driver_info keys of each ramdisk's kernel and initrd. */
export const RAMDISK_IMAGE_KEYS: Readonly<Record<RamdiskMode, readonly [BootImageName, BootImageName]>> = {
  deploy: ['deploy_kernel', 'deploy_ramdisk'],
  rescue: ['rescue_kernel', 'rescue_ramdisk'],
};

/** What a boot interface's getProperties says about the image keys. */
export const RAMDISK_IMAGE_PROPERTIES: Readonly<Record<BootImageName, string>> = {
  deploy_kernel: 'Kernel of the deploy ramdisk: an absolute path, a file:// URL or an http(s) URL (required)',
  deploy_ramdisk: 'Initrd of the deploy ramdisk, in the same forms (required)',
  rescue_kernel: 'Kernel of the rescue ramdisk, in the same forms; needed to rescue the node',
  rescue_ramdisk: 'Initrd of the rescue ramdisk, in the same forms; needed to rescue the node',
};

export type RamdiskImageSources = Partial<Record<BootImageName, ImageSource>>;

export interface RamdiskImageOptions {
  /** [conductor]file_url_allowed_paths: local images must resolve under one of these. */
  allowedPaths: readonly string[];
}

/**
 * The kernel and initrd of `mode` from driver_info. MissingParameterValue
 * when either is unset; InvalidParameterValue when malformed, or a local
 * file outside [conductor]file_url_allowed_paths (checked on the resolved
 * path, symbolic links followed).
 */
export async function ramdiskImageSources(
  node: NodeRecord,
  mode: RamdiskMode,
  options: RamdiskImageOptions,
): Promise<RamdiskImageSources> {
  const keys = RAMDISK_IMAGE_KEYS[mode];
  const missing = keys.filter(
    (key) => node.driverInfo[key] === undefined || node.driverInfo[key] === null || node.driverInfo[key] === '',
  );
  if (missing.length > 0) {
    throw new MissingParameterValue(
      `Node ${node.uuid} is missing the following parameters in driver_info: ${missing.join(', ')}.`,
      { missing },
    );
  }
  const sources: RamdiskImageSources = {};
  for (const key of keys) {
    const source = parseImageSource(key, node.driverInfo[key]);
    if (source.kind === 'local') await checkLocalImageAllowed(key, source.path, options.allowedPaths);
    sources[key] = source;
  }
  return sources;
}

/** Every ramdisk's sources the node names: deploy always, rescue when either rescue key is set. */
export async function validateRamdiskImages(node: NodeRecord, options: RamdiskImageOptions): Promise<void> {
  await ramdiskImageSources(node, 'deploy', options);
  const info = node.driverInfo;
  if (info.rescue_kernel !== undefined || info.rescue_ramdisk !== undefined) {
    await ramdiskImageSources(node, 'rescue', options);
  }
}

export interface PlaceRamdiskOptions extends RamdiskImageOptions {
  /** Longest one download may take, in milliseconds. */
  downloadTimeoutMs: number;
  logger: Logger;
}

/**
 * Places the node's images of `sources` in its directory and removes the
 * other ramdisk's: what a boot config names is there before it is written.
 */
export async function placeRamdiskImages(
  layout: HttpRootLayout,
  nodeUuid: string,
  sources: RamdiskImageSources,
  options: PlaceRamdiskOptions,
): Promise<void> {
  for (const [image, source] of Object.entries(sources) as [BootImageName, ImageSource][]) {
    const outcome = await placeBootImage(source, layout.nodeImage(nodeUuid, image), {
      key: image,
      downloadTimeoutMs: options.downloadTimeoutMs,
      allowedPaths: options.allowedPaths,
    });
    options.logger.debug(`${image}: ${outcome}`);
  }
  for (const image of BOOT_IMAGE_NAMES.filter((name) => !(name in sources))) {
    await removeBootImage(layout.nodeImage(nodeUuid, image));
  }
}

/** Removes every image of the node (and what was remembered about them). */
export async function removeRamdiskImages(layout: HttpRootLayout, nodeUuid: string): Promise<void> {
  for (const image of BOOT_IMAGE_NAMES) await removeBootImage(layout.nodeImage(nodeUuid, image));
}
