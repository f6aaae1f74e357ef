import { mkdirSync } from 'node:fs';
import type { Logger, NodeRecord } from '@bmaas/common';
import { MissingParameterValue } from '@bmaas/common';
import type { RamdiskMode } from '@bmaas/driver-api';
import {
  type AllowedImageDirs,
  allowedDirsOf,
  checkLocalImage,
  type DestDirectory,
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
  allowedPaths: AllowedImageDirs | readonly string[];
}

/**
 * The kernel and initrd of `mode` from driver_info. MissingParameterValue
 * when either is unset; InvalidParameterValue when malformed, or a local
 * file outside [conductor]file_url_allowed_paths (checked on the resolved
 * path, symbolic links followed) or not a regular file. Local sources carry
 * their check, which placeRamdiskImages does not repeat.
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
  // The allowed directories are resolved (when needed) once for all of the node's images.
  const allowed = allowedDirsOf(options.allowedPaths);
  const sources: RamdiskImageSources = {};
  for (const key of keys) {
    const source = parseImageSource(key, node.driverInfo[key]);
    sources[key] =
      source.kind === 'local' ? { ...source, checked: await checkLocalImage(key, source.path, allowed) } : source;
  }
  return sources;
}

/** What validateRamdiskImages checked, by ramdisk. */
export type CheckedRamdisks = Partial<Record<RamdiskMode, RamdiskImageSources>>;

/**
 * Every ramdisk's sources the node names: deploy always, rescue when either
 * rescue key is set. Returns them checked (see ramdiskImageSources).
 */
export async function validateRamdiskImages(node: NodeRecord, options: RamdiskImageOptions): Promise<CheckedRamdisks> {
  const allowed = { allowedPaths: allowedDirsOf(options.allowedPaths) };
  const checked: CheckedRamdisks = { deploy: await ramdiskImageSources(node, 'deploy', allowed) };
  const info = node.driverInfo;
  if (info.rescue_kernel !== undefined || info.rescue_ramdisk !== undefined) {
    checked.rescue = await ramdiskImageSources(node, 'rescue', allowed);
  }
  return checked;
}

/**
 * The sources a boot interface's validate checked, kept for its
 * prepareRamdisk of the same task (the node's lock is held in between):
 * a deploy checked each image once instead of twice. Taken once; only while
 * driver_info names the same images. Placing a source still makes sure its
 * file is the one checked (placeBootImage).
 */
export class ValidatedRamdiskImages {
  private readonly byTask = new WeakMap<object, { images: string; checked: CheckedRamdisks }>();

  remember(task: object, node: NodeRecord, checked: CheckedRamdisks): void {
    this.byTask.set(task, { images: imagesNamed(node), checked });
  }

  /** The checked sources of `mode`, when validate ran in this task on the same driver_info images. */
  take(task: object, node: NodeRecord, mode: RamdiskMode): RamdiskImageSources | undefined {
    const kept = this.byTask.get(task);
    if (!kept) return undefined;
    this.byTask.delete(task);
    return kept.images === imagesNamed(node) ? kept.checked[mode] : undefined;
  }
}

function imagesNamed(node: NodeRecord): string {
  return JSON.stringify(BOOT_IMAGE_NAMES.map((name) => node.driverInfo[name] ?? null));
}

export interface PlaceRamdiskOptions extends RamdiskImageOptions {
  /** Longest one download may take, in milliseconds. */
  downloadTimeoutMs: number;
  logger: Logger;
}

/**
 * Places the node's images of `sources` in its directory and removes the
 * other ramdisk's: what a boot config names is there before it is written.
 * Called under the node's lock. The directory is made first; when that
 * call made it, nothing was in it, so nothing is looked up or removed
 * (a first deploy: no lookups of absent images and records). Returns
 * whether it was made ('new', then empty but for these images) or was
 * there already ('existing'): either way it exists now.
 */
export async function placeRamdiskImages(
  layout: HttpRootLayout,
  nodeUuid: string,
  sources: RamdiskImageSources,
  options: PlaceRamdiskOptions,
): Promise<DestDirectory> {
  // mkdir with `recursive` names the first directory it made, undefined when it made none
  // (synchronous, as the writes of atomic-files.ts: see there).
  const directory: DestDirectory =
    mkdirSync(layout.nodeDir(nodeUuid), { recursive: true }) === undefined ? 'existing' : 'new';
  for (const [image, source] of Object.entries(sources) as [BootImageName, ImageSource][]) {
    const outcome = await placeBootImage(source, layout.nodeImage(nodeUuid, image), {
      key: image,
      downloadTimeoutMs: options.downloadTimeoutMs,
      allowedPaths: options.allowedPaths,
      directory,
    });
    options.logger.debug(`${image}: ${outcome}`);
  }
  if (directory === 'new') return directory;
  for (const image of BOOT_IMAGE_NAMES.filter((name) => !(name in sources))) {
    await removeBootImage(layout.nodeImage(nodeUuid, image));
  }
  return directory;
}

/** Removes every image of the node (and what was remembered about them). */
export async function removeRamdiskImages(layout: HttpRootLayout, nodeUuid: string): Promise<void> {
  for (const image of BOOT_IMAGE_NAMES) await removeBootImage(layout.nodeImage(nodeUuid, image));
}
