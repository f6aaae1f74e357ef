import { closeSync, constants, lstatSync, openSync, readFileSync, readSync } from 'node:fs';
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
  /** Where readNodeFile reads: boot configs are a few hundred bytes; a larger file takes a second pass. */
  private readonly readBuffer = Buffer.allocUnsafe(64 * 1024);

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
    return fileIn(this.nodeDir(nodeUuid), name);
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
   * Four system calls (lstat, open, one read, close): a file shorter than
   * the read buffer needs neither readFileSync's fstat nor a read to find
   * its end, and system calls are about half of what a boot request costs
   * a conductor.
   */
  readNodeFile(nodeUuid: string, name: string): string | undefined {
    const dir = this.nodeDir(nodeUuid);
    const file = fileIn(dir, name);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return undefined;
    let content: string;
    try {
      content = readSmallFile(file, this.readBuffer);
    } catch (error) {
      if (isUnreadable(error)) return undefined;
      throw error;
    }
    // Nothing a boot interface renders is empty (an empty answer would be a FIFO or a stray file).
    return content === '' ? undefined : content;
  }
}

/** `name` in `dir`: a checked name is one plain segment, so appending it is what join() would give. */
function fileIn(dir: string, name: string): string {
  if (!FILE_NAME.test(name)) throw new Error(`not a file name: ${JSON.stringify(name)}`);
  return dir + sep + name;
}

/**
 * The file at `path` as UTF-8, through `buffer`: one read when it is shorter
 * than the buffer. A read that fills the buffer may not have reached the
 * end: the rest follows, and the bytes are decoded together (a character
 * may straddle the buffer's end). A plain read, not pread: a FIFO has no
 * offset to read at.
 */
function readSmallFile(path: string, buffer: Buffer): string {
  const fd = openSync(path, NO_FOLLOW_READ);
  try {
    const read = readSync(fd, buffer, 0, buffer.length, null);
    if (read < buffer.length) return buffer.toString('utf8', 0, read);
    return Buffer.concat([buffer, readFileSync(fd)]).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Read only, refusing a symbolic link as the last component, never blocking on a FIFO. */
const NO_FOLLOW_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Missing, a symbolic link refused by O_NOFOLLOW, or not a file. */
function isUnreadable(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EMLINK' || code === 'EISDIR';
}
