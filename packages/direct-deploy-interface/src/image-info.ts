import { InvalidParameterValue, type JsonObject, MissingParameterValue, type NodeRecord } from '@bmaas/common';

/** Disk formats the agent path takes: raw streams straight to the disk; qcow2 is converted by the agent. */
export const DISK_FORMATS: readonly string[] = ['raw', 'qcow2'];
/** Hash algorithms the agent verifies images with (image_os_hash_algo). */
export const HASH_ALGORITHMS: readonly string[] = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'];
/** Legacy image_checksum: the algorithm follows from the length of the hex digest. */
const CHECKSUM_HEX = /^(?:[0-9a-f]{32}|[0-9a-f]{64}|[0-9a-f]{128})$/i;

/** Where the agent downloads the image from: the image_source URL, or the conductor's own file server. */
export const DOWNLOAD_SOURCES: readonly string[] = ['http', 'local'];

/** What instance_info says about the image, once checked. */
export interface InstanceImage {
  source: string;
  diskFormat: string;
  downloadSource: 'http' | 'local';
  osHashAlgo?: string;
  osHashValue?: string;
  checksum?: string;
}

function text(info: JsonObject, key: string): string | undefined {
  const value = info[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new InvalidParameterValue(`instance_info.${key} must be a string.`);
  return value;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Checks the image fields of instance_info as Ironic's direct deploy does
 * for an image given by URL: image_source (http or https), a checksum
 * (image_os_hash_algo + image_os_hash_value, or the legacy image_checksum:
 * a hex digest or an http(s) URL of a checksums file), image_disk_format.
 * Whole-disk images only: kernel/ramdisk (partition images) are refused.
 * Throws MissingParameterValue / InvalidParameterValue.
 */
export function instanceImageOf(
  node: Pick<NodeRecord, 'instanceInfo'> & Partial<Pick<NodeRecord, 'driverInfo'>>,
  defaultDownloadSource = 'http',
): InstanceImage {
  const info = node.instanceInfo;
  // per node as upstream: instance_info, then driver_info, then [agent]image_download_source
  const downloadSource =
    text(info, 'image_download_source') ??
    text(node.driverInfo ?? {}, 'image_download_source') ??
    defaultDownloadSource;
  if (!DOWNLOAD_SOURCES.includes(downloadSource)) {
    throw new InvalidParameterValue(
      `image_download_source "${downloadSource}" is not supported (${DOWNLOAD_SOURCES.join(', ')}).`,
    );
  }
  const source = text(info, 'image_source');
  if (!source) throw new MissingParameterValue('instance_info.image_source is required to deploy.');
  if (!isHttpUrl(source)) {
    throw new InvalidParameterValue(
      `instance_info.image_source must be an http(s) URL of the image, got ${JSON.stringify(source)}.`,
    );
  }
  if (text(info, 'kernel') || text(info, 'ramdisk')) {
    throw new InvalidParameterValue(
      'Partition images (instance_info kernel/ramdisk) are not supported: deploy a whole-disk image.',
    );
  }
  const diskFormat = text(info, 'image_disk_format') ?? 'raw';
  if (!DISK_FORMATS.includes(diskFormat)) {
    throw new InvalidParameterValue(
      `instance_info.image_disk_format "${diskFormat}" is not supported (${DISK_FORMATS.join(', ')}).`,
    );
  }
  const osHashAlgo = text(info, 'image_os_hash_algo');
  const osHashValue = text(info, 'image_os_hash_value');
  const checksum = text(info, 'image_checksum');
  if (osHashAlgo || osHashValue) {
    if (!osHashAlgo || !osHashValue) {
      throw new MissingParameterValue('instance_info.image_os_hash_algo and image_os_hash_value go together.');
    }
    if (!HASH_ALGORITHMS.includes(osHashAlgo)) {
      throw new InvalidParameterValue(
        `instance_info.image_os_hash_algo "${osHashAlgo}" is not supported (${HASH_ALGORITHMS.join(', ')}).`,
      );
    }
    if (!/^[0-9a-f]+$/i.test(osHashValue)) {
      throw new InvalidParameterValue('instance_info.image_os_hash_value must be a hex digest.');
    }
  } else if (!checksum) {
    throw new MissingParameterValue(
      'instance_info needs image_os_hash_algo + image_os_hash_value (or the legacy image_checksum) to deploy.',
    );
  }
  if (checksum && !CHECKSUM_HEX.test(checksum) && !isHttpUrl(checksum)) {
    throw new InvalidParameterValue(
      'instance_info.image_checksum must be an MD5/SHA-256/SHA-512 hex digest or an http(s) URL.',
    );
  }
  if (downloadSource === 'local' && !osHashAlgo && !CHECKSUM_HEX.test(checksum ?? '')) {
    throw new InvalidParameterValue(
      'image_download_source local needs the image hash (image_os_hash_*, or image_checksum as a hex digest): the conductor verifies it.',
    );
  }
  return {
    source,
    diskFormat,
    downloadSource: downloadSource as InstanceImage['downloadSource'],
    ...(osHashAlgo ? { osHashAlgo, osHashValue: (osHashValue as string).toLowerCase() } : {}),
    ...(checksum ? { checksum } : {}),
  };
}

/** The hash the conductor verifies a local download with: image_os_hash_*, else the hex image_checksum. */
export function imageHashOf(image: InstanceImage): { algo: string; value: string } {
  if (image.osHashAlgo && image.osHashValue) return { algo: image.osHashAlgo, value: image.osHashValue };
  const checksum = image.checksum ?? '';
  return {
    algo: ({ 32: 'md5', 64: 'sha256', 128: 'sha512' } as Record<number, string>)[checksum.length] ?? '',
    value: checksum,
  };
}

/** The `image_info` argument of the agent's write_image, as Ironic builds it for a whole-disk image. */
export function imageInfoFor(
  node: Pick<NodeRecord, 'uuid' | 'instanceInfo' | 'driverInfo'>,
  options: { streamRawImages: boolean },
): JsonObject {
  const image = instanceImageOf(node);
  return imageInfoOf(node, image, options);
}

/** image_info for a checked image (`image.source` is the URL the agent downloads). */
export function imageInfoOf(
  node: Pick<NodeRecord, 'uuid' | 'driverInfo'>,
  image: InstanceImage,
  options: { streamRawImages: boolean },
): JsonObject {
  const path = new URL(image.source).pathname;
  const proxies = Object.fromEntries(
    [
      ['http', node.driverInfo.image_http_proxy],
      ['https', node.driverInfo.image_https_proxy],
    ].filter(([, value]) => typeof value === 'string' && value !== ''),
  );
  return {
    id: path.slice(path.lastIndexOf('/') + 1) || image.source,
    urls: [image.source],
    disk_format: image.diskFormat,
    container_format: 'bare',
    stream_raw_images: options.streamRawImages,
    node_uuid: node.uuid,
    ...(image.osHashAlgo ? { os_hash_algo: image.osHashAlgo, os_hash_value: image.osHashValue } : {}),
    ...(image.checksum ? { checksum: image.checksum } : {}),
    ...(Object.keys(proxies).length > 0 ? { proxies } : {}),
    ...(typeof node.driverInfo.image_no_proxy === 'string' ? { no_proxy: node.driverInfo.image_no_proxy } : {}),
  };
}
