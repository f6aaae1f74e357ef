import { randomBytes } from 'node:crypto';
import { copyFile, link, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@bmaas/common';
import type { CachedInstanceImage, InstanceImageRequest, InstanceImages } from '@bmaas/driver-api';
import { redactUrl, removeIfPresent, replaceAtomically, writeFileAtomically } from '@bmaas/http-root';
import {
  checkImage,
  convertToRaw,
  type ImageFormat,
  type ImageInspection,
  InvalidImage,
  inspectImageFile,
  RAW_FORMATS,
} from '@bmaas/image-format';
import { downloadVerified, sha256Of } from './download.js';
import type { InstanceImageCacheSettings } from './settings.js';
import { WorkLimit } from './work-limit.js';

export type ImageRequest = InstanceImageRequest;
/** An image in the cache, checked, converted when asked, ready to serve. */
export interface CachedImage extends CachedInstanceImage {
  format: ImageFormat;
}

const KEY = /^[a-z0-9]+-[0-9a-f]+(?:-raw)?$/;
/** A download or conversion under way (or left by a previous run). */
const PARTIAL = /^\.[a-z0-9]+-[0-9a-f]+(?:-raw)?\.[0-9a-f]+\.part(?:\.raw)?$/;

/**
 * The conductor's cache of instance images for `image_download_source =
 * local`, as Ironic's master image cache: keyed by checksum, at most
 * [conductor]instance_image_cache_size bytes (the least recently used image
 * goes first), one download for every concurrent request of an image, at
 * most [conductor]image_download_concurrency downloads and conversions at
 * once. An image enters the cache only once its checksum is verified, its
 * format inspected and checked (unsafe, not permitted, or other than
 * declared: InvalidImage) and, with [DEFAULT]force_raw_images, converted to
 * raw; it is built under a dot-name and renamed into place, so a partial
 * file is never served. A restarted conductor keeps the complete entries
 * (each has its record beside it) and removes the rest.
 */
export class InstanceImageCache implements InstanceImages {
  /** Complete entries, least recently used first (a use moves an entry to the end). */
  private readonly entries = new Map<string, CachedImage>();
  private readonly filling = new Map<string, Promise<CachedImage>>();
  private readonly limit: WorkLimit;
  private loaded: Promise<void> | undefined;
  /** Downloads started since this cache was made (one per image, however many asked at once). */
  downloads = 0;

  constructor(
    readonly settings: InstanceImageCacheSettings,
    private readonly logger: Logger,
  ) {
    this.limit = new WorkLimit(settings.concurrency);
  }

  /** Bytes of the complete entries. */
  get usedBytes(): number {
    let total = 0;
    for (const entry of this.entries.values()) total += entry.size;
    return total;
  }

  /** The cached image for `request`, downloading (once), checking and converting it when it is not there. */
  async get(request: ImageRequest): Promise<CachedImage> {
    await this.load();
    const key = `${request.hash.algo}-${request.hash.value.toLowerCase()}${this.settings.forceRaw ? '-raw' : ''}`;
    if (!KEY.test(key))
      throw new InvalidImage(`Image checksum ${request.hash.algo} ${request.hash.value} is not a hex digest.`);
    const cached = this.entries.get(key);
    if (cached) {
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    let pending = this.filling.get(key);
    if (!pending) {
      pending = this.limit.run(() => this.fill(key, request)).finally(() => this.filling.delete(key));
      this.filling.set(key, pending);
    }
    return pending;
  }

  /**
   * Makes `dest` (a path in the http root) the image's file: a hard link,
   * so evicting the entry later does not take it from an agent still
   * downloading it; a copy when the cache is on another file system.
   */
  async publish(image: CachedImage, dest: string): Promise<void> {
    await mkdir(join(dest, '..'), { recursive: true });
    await replaceAtomically(
      dest,
      async (temp) => {
        try {
          await link(image.path, temp);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
          await copyFile(image.path, temp);
        }
      },
      { directoryExists: true },
    );
  }

  private async fill(key: string, request: ImageRequest): Promise<CachedImage> {
    const { path: dir, forceRaw, permittedFormats, downloadTimeoutMs } = this.settings;
    const name = redactUrl(request.url);
    const part = join(dir, `.${key}.${randomBytes(6).toString('hex')}.part`);
    const converted = `${part}.raw`;
    this.downloads++;
    const started = Date.now();
    try {
      const download = await downloadVerified(request.url, part, request.hash, downloadTimeoutMs);
      // inspected before anything else reads it: qemu-img never sees an unsafe image
      let inspection: ImageInspection = checkImage(await inspectImageFile(part), {
        declaredFormat: request.declaredFormat,
        permittedFormats,
        name,
      });
      let file = part;
      let sha256 = download.sha256;
      if (forceRaw && !RAW_FORMATS.has(inspection.format) && inspection.format !== 'iso') {
        await convertToRaw(part, converted, inspection.format);
        await rm(part, { force: true });
        inspection = await inspectImageFile(converted);
        if (!RAW_FORMATS.has(inspection.format) || inspection.violations.length > 0) {
          throw new InvalidImage(`Image ${name} was converted to raw, but the result reads as ${inspection.format}.`);
        }
        file = converted;
        sha256 = await sha256Of(converted);
      }
      const { size } = await stat(file);
      await this.makeRoom(size, name);
      const image: CachedImage = {
        key,
        path: join(dir, key),
        format: inspection.format,
        virtualSize: inspection.virtualSize ?? size,
        size,
        sha256,
      };
      await rename(file, image.path);
      await writeFileAtomically(`${image.path}.json`, `${JSON.stringify(image)}\n`, { directoryExists: true });
      this.entries.set(key, image);
      this.logger.info('instance image cached', {
        image: name,
        format: image.format,
        size,
        virtualSize: image.virtualSize,
        seconds: (Date.now() - started) / 1000,
      });
      return image;
    } finally {
      await rm(part, { force: true });
      await rm(converted, { force: true });
    }
  }

  /** Evicts the least recently used entries until `bytes` more fit; refuses an image larger than the cache. */
  private async makeRoom(bytes: number, name: string): Promise<void> {
    const { maxBytes } = this.settings;
    if (bytes > maxBytes) {
      const mib = (n: number) => Math.ceil(n / 1024 / 1024);
      throw new InvalidImage(
        `Image ${name} takes ${mib(bytes)} MiB, more than [conductor]instance_image_cache_size (${mib(maxBytes)} MiB).`,
      );
    }
    let used = this.usedBytes;
    for (const [key, entry] of this.entries) {
      if (used + bytes <= maxBytes) break;
      this.entries.delete(key);
      await removeIfPresent(`${entry.path}.json`);
      await removeIfPresent(entry.path);
      used -= entry.size;
      this.logger.info('instance image evicted from the cache', { key, size: entry.size });
    }
  }

  /** Once: the directory made, complete entries of a previous run taken back (oldest first), the rest removed. */
  private load(): Promise<void> {
    this.loaded ??= (async () => {
      const dir = this.settings.path;
      await mkdir(dir, { recursive: true });
      const names = await readdir(dir);
      const found: Array<CachedImage & { usedAt: number }> = [];
      for (const name of names) {
        if (KEY.test(name) && names.includes(`${name}.json`)) {
          try {
            const image = JSON.parse(await readFile(join(dir, `${name}.json`), 'utf8')) as CachedImage;
            const { size, atimeMs } = await stat(join(dir, name));
            if (image.key === name && image.size === size) {
              found.push({ ...image, path: join(dir, name), usedAt: atimeMs });
              continue;
            }
          } catch {
            // an unreadable record: the entry goes
          }
        }
        // only what this cache makes goes: partial files, and entries without a matching record
        if (PARTIAL.test(name) || KEY.test(name)) await rm(join(dir, name), { force: true });
      }
      for (const { usedAt: _usedAt, ...image } of found.sort((a, b) => a.usedAt - b.usedAt)) {
        this.entries.set(image.key, image);
      }
      // records whose image went
      for (const name of names.filter(
        (n) => n.endsWith('.json') && KEY.test(n.slice(0, -5)) && !this.entries.has(n.slice(0, -5)),
      )) {
        await rm(join(dir, name), { force: true });
      }
    })();
    return this.loaded;
  }
}
