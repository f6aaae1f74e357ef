import { constants, lstatSync, readFileSync } from 'node:fs';
import { isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { ConfigError, InvalidUUID, macToHyphens, parseMac } from '@bmaas/common';

/** The images a node directory may hold: the kernel and initrd of each ramdisk. */
export const BOOT_IMAGE_NAMES = ['deploy_kernel', 'deploy_ramdisk', 'rescue_kernel', 'rescue_ramdisk'] as const;
export type BootImageName = (typeof BOOT_IMAGE_NAMES)[number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A file name a boot interface chose (never request input): one plain path segment. */
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/**
 * Where boot files live under [deploy]http_root, for any boot interface:
 *
 *   <root>/<file>                   files shared by every machine (iPXE's boot.ipxe, GRUB's grub/grub.cfg)
 *   <root>/<uuid>/<name>            a node's own files: its boot config and its images
 *   <root>/<subdir>/<mac>           per-MAC entries (iPXE's pxelinux.cfg links)
 *
 * Every path is built from a checked uuid, MAC or fixed name, never from
 * request input.
 */
export class HttpRootLayout {
  readonly root: string;
  /**
   * The root with one separator after it. A checked uuid or file name is one
   * plain segment, so appending it is what join() would give, without its
   * normalisation: join() was a tenth of what the boot path allocated.
   */
  private readonly prefix: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.prefix = this.root.endsWith(sep) ? this.root : this.root + sep;
  }

  /**
   * A path inside the root given by configuration (`option` names it in the
   * error): relative, normalised, and never the root itself or outside it.
   */
  subdir(path: string, option: string): string {
    const subdir = normalize(path).replace(/[/\\]+$/, '');
    if (isAbsolute(path) || subdir === '.' || subdir === '' || subdir.split(sep).includes('..')) {
      throw new ConfigError(`${option} = ${JSON.stringify(path)}: must be a directory inside [deploy]http_root`);
    }
    return join(this.root, subdir);
  }

  /** A file shared by every machine, at `relativePath` under the root (a fixed name of the boot interface). */
  file(relativePath: string): string {
    const segments = relativePath.split('/');
    if (!segments.every((segment) => FILE_NAME.test(segment))) {
      throw new Error(`not a file name under the HTTP root: ${JSON.stringify(relativePath)}`);
    }
    return join(this.root, ...segments);
  }

  nodeDir(nodeUuid: string): string {
    if (!UUID.test(nodeUuid)) throw new InvalidUUID(nodeUuid);
    return this.prefix + nodeUuid.toLowerCase();
  }

  /** A file of the node's own, e.g. its boot config (`config`, `grub.cfg`). */
  nodeFile(nodeUuid: string, name: string): string {
    if (!FILE_NAME.test(name)) throw new Error(`not a file name: ${JSON.stringify(name)}`);
    return this.nodeDir(nodeUuid) + sep + name;
  }

  nodeImage(nodeUuid: string, image: BootImageName): string {
    return this.nodeFile(nodeUuid, image);
  }

  /** `<dir>/52-54-00-12-34-56` for any accepted MAC form. */
  macFile(dir: string, mac: string): string {
    return join(dir, macToHyphens(parseMac(mac)));
  }

  /** `path` relative to `dir`, for relative symbolic links that stay inside the root. */
  relativeFrom(dir: string, path: string): string {
    return relative(dir, path);
  }

  /**
   * The node's file `name` as text, or undefined when there is none. Reads
   * as the file server serves: no symbolic link is followed, neither the
   * node directory nor the file itself, so a link planted under the root
   * cannot publish a file from elsewhere. Synchronous on purpose: a boot
   * config is a few hundred bytes in the page cache, on the boot path,
   * where fs.promises' thread-pool round trips cost more than the read.
   */
  readNodeFile(nodeUuid: string, name: string): string | undefined {
    if (!FILE_NAME.test(name)) throw new Error(`not a file name: ${JSON.stringify(name)}`);
    const dir = this.nodeDir(nodeUuid);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return undefined;
    let content: string;
    try {
      // readFileSync takes open(2) flags as a number too (its types say string only); that keeps its
      // one-call path: open (no link followed), fstat, read, close.
      content = readFileSync(dir + sep + name, { encoding: 'utf8', flag: NO_FOLLOW_READ as unknown as string });
    } catch (error) {
      if (isUnreadable(error)) return undefined;
      throw error;
    }
    // Nothing a boot interface renders is empty (an empty answer would be a FIFO or a stray file).
    return content === '' ? undefined : content;
  }
}

/** Read only, refusing a symbolic link as the last component, never blocking on a FIFO. */
const NO_FOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Missing, a symbolic link refused by O_NOFOLLOW, or not a file. */
function isUnreadable(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EMLINK' || code === 'EISDIR';
}
