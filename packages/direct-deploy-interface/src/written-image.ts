import { BmaasError, type JsonObject } from '@bmaas/common';

/** The agent's write_image ended without the image the conductor asked for on the disk. */
export class InstanceDeployFailure extends BmaasError {}

/** What the conductor asked the agent to write (kept in driver_internal_info until the agent answers). */
export interface AskedImage {
  /** image_info.id */
  id: string;
  /** image_info.disk_format: the format of the bytes at the URL the agent was given. */
  diskFormat: string;
  osHashAlgo?: string;
  osHashValue?: string;
  /** The legacy image_checksum: a hex digest (its algorithm follows from its length) or a checksums URL. */
  checksum?: string;
  /** Bytes the disk image stands for, when the conductor inspected the image itself (local download source). */
  virtualSize?: number;
}

const ALGORITHM_OF_LENGTH: Record<number, string> = { 32: 'md5', 64: 'sha256', 128: 'sha512' };

/** The hash the agent must have found: os_hash_*, else a hex image_checksum; none for a checksums URL. */
function expectedHash(asked: AskedImage): { algo: string; value: string } | undefined {
  if (asked.osHashAlgo && asked.osHashValue) return { algo: asked.osHashAlgo, value: asked.osHashValue.toLowerCase() };
  const algo = asked.checksum && /^[0-9a-f]+$/i.test(asked.checksum) && ALGORITHM_OF_LENGTH[asked.checksum.length];
  return algo && asked.checksum ? { algo, value: asked.checksum.toLowerCase() } : undefined;
}

/**
 * Checks what the agent says it wrote against what it was asked to write,
 * before the node may go on to boot its disk; throws InstanceDeployFailure
 * naming the difference. Two answers are understood:
 *
 * - ironic-python-agent's `deploy_result`, the text "image (<id>) written to
 *   device …": it must name the image asked for (IPA verifies the hash and
 *   converts non-raw images itself);
 * - a report `{image: {source_format, written_format, size, os_hash_algo,
 *   os_hash_value}}` (the test ramdisk's agent): the format it read must be
 *   the one asked, what it left on the disk must be raw, its hash the one
 *   asked, and its size the image's virtual size when the conductor knows it.
 *
 * Anything else (no result at all) is a failure: success is a checked result.
 */
export function checkWrittenImage(deployResult: unknown, asked: AskedImage): void {
  if (typeof deployResult === 'string') {
    if (!deployResult.includes(`(${asked.id})`)) {
      throw new InstanceDeployFailure(`The agent reports another image written than ${asked.id}: "${deployResult}".`);
    }
    return;
  }
  const image = (deployResult as JsonObject | null)?.image as JsonObject | undefined;
  if (!image || typeof image !== 'object') {
    throw new InstanceDeployFailure(
      `The agent reported no image written (deploy_result ${JSON.stringify(deployResult ?? null)}): the disk is not known to hold ${asked.id}.`,
    );
  }
  if (image.source_format !== asked.diskFormat) {
    throw new InstanceDeployFailure(
      `The agent read the image as ${String(image.source_format)}, but ${asked.diskFormat} was asked.`,
    );
  }
  if (image.written_format !== 'raw') {
    throw new InstanceDeployFailure(
      `The agent left a ${String(image.written_format)} image on the disk, which the machine cannot boot: it must write raw.`,
    );
  }
  const hash = expectedHash(asked);
  if (hash && (image.os_hash_algo !== hash.algo || String(image.os_hash_value).toLowerCase() !== hash.value)) {
    throw new InstanceDeployFailure(
      `The agent wrote an image of ${String(image.os_hash_algo)} ${String(image.os_hash_value)}, but ${hash.algo} ${hash.value} was asked.`,
    );
  }
  if (typeof image.size !== 'number' || !Number.isInteger(image.size) || image.size <= 0) {
    throw new InstanceDeployFailure(`The agent reported no size written (${JSON.stringify(image.size ?? null)}).`);
  }
  if (asked.virtualSize !== undefined && image.size !== asked.virtualSize) {
    throw new InstanceDeployFailure(
      `The agent wrote ${image.size} bytes, but the image stands for a disk of ${asked.virtualSize} bytes.`,
    );
  }
}
