/** An instance image a deploy interface wants on its conductor's file server (image_download_source local). */
export interface InstanceImageRequest {
  url: string;
  /** instance_info.image_disk_format: what the image claims to be. */
  declaredFormat: string;
  /** Its checksum: an algorithm node:crypto knows and the hex digest. */
  hash: { algo: string; value: string };
}

/** An instance image downloaded, checked and (when configured) converted by the conductor. */
export interface CachedInstanceImage {
  key: string;
  path: string;
  /** The format of the file served, as told from its bytes (raw, gpt and mbr are raw disks). */
  format: string;
  /** Bytes of the disk it stands for. */
  virtualSize: number;
  /** Bytes of the file. */
  size: number;
  /** SHA-256 of the file served. */
  sha256: string;
}

/**
 * The conductor's instance images (one per conductor, shared by its
 * interfaces): `get` downloads an image once, verifies its checksum,
 * inspects its format (refusing unsafe images and a declared format that
 * is not the real one with InvalidImage) and converts it when configured;
 * concurrent calls for one image share the work. `publish` puts the image
 * at a path of the conductor's http root, whole or not at all. Both may be
 * called again for the same image (idempotent).
 */
export interface InstanceImages {
  get(request: InstanceImageRequest): Promise<CachedInstanceImage>;
  publish(image: CachedInstanceImage, dest: string): Promise<void>;
}
