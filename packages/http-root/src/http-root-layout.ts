import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readSync, type Stats } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { ConfigError, type ConfigSection, InvalidUUID, macToHyphens, parseMac } from '@bmaas/common';
import { removeIfPresent, writeFileAtomically, writeFileIfChanged } from './atomic-files.js';

/** The images a node directory may hold: the kernel and initrd of each ramdisk. */
export const BOOT_IMAGE_NAMES = ['deploy_kernel', 'deploy_ramdisk', 'rescue_kernel', 'rescue_ramdisk'] as const;
export type BootImageName = (typeof BOOT_IMAGE_NAMES)[number];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A file name a boot interface chose (never request input): one plain path segment. */
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export interface HttpRootLayoutOptions {
  /**
   * Most bytes of node files readNodeFile keeps to serve again
   * ([deploy]boot_config_cache_bytes); 0 or absent: every read opens the file.
   */
  readCacheBytes?: number;
  /**
   * Milliseconds after a held file was found unchanged (or read, or noted as
   * written) during which readNodeFile serves it again without an lstat
   * ([deploy]boot_config_cache_check_interval); 0 or absent: an lstat per read.
   */
  readCacheCheckIntervalMs?: number;
  /** The clock that tells a file changed too recently to be trusted from memory (tests move it). */
  now?: () => number;
}

/** The read cache as [deploy] sets it: boot_config_cache_bytes and boot_config_cache_check_interval. */
export function readCacheOptionsOf(
  deploy: Pick<ConfigSection<'deploy'>, 'boot_config_cache_bytes' | 'boot_config_cache_check_interval'>,
): HttpRootLayoutOptions {
  return {
    readCacheBytes: deploy.boot_config_cache_bytes,
    readCacheCheckIntervalMs: deploy.boot_config_cache_check_interval * 1000,
  };
}

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
  private readonly cache: NodeFileCache | undefined;
  private readonly now: () => number;
  /** The names of node files given to the cache (read or noted): what forgetting a node's files must look for. */
  private readonly heldNames = new Set<string>();

  constructor(root: string, options: HttpRootLayoutOptions = {}) {
    this.root = resolve(root);
    this.prefix = this.root.endsWith(sep) ? this.root : this.root + sep;
    const { readCacheBytes = 0, readCacheCheckIntervalMs = 0, now = Date.now } = options;
    this.now = now;
    this.cache = readCacheBytes > 0 ? new NodeFileCache(readCacheBytes, readCacheCheckIntervalMs, now) : undefined;
  }

  /** Node files held for readNodeFile, and their size in characters (bytes, for the ASCII boot interfaces write). */
  get cached(): { files: number; bytes: number } {
    return this.cache ? this.cache.size() : { files: 0, bytes: 0 };
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
   *
   * A read is four system calls (lstat, open, one read, close): a file
   * shorter than the read buffer needs neither readFileSync's fstat nor a
   * read to find its end. With the read cache on, a file read or written
   * before is served from memory after one lstat shows it is still that
   * very file (NodeFileCache), and with a check interval, without that
   * lstat for a while after one: system calls were about half of what a boot
   * request cost a conductor.
   */
  readNodeFile(nodeUuid: string, name: string): string | undefined {
    const dir = this.nodeDir(nodeUuid);
    const file = fileIn(dir, name);
    const cache = this.cache;
    const now = this.now();
    const held = cache?.matching(file, now);
    if (held !== undefined && held.trustedFrom <= now) return held.content;
    // What the checked read refuses is not served from memory later either.
    const refused = (): undefined => (held ? cache?.forget(file) : undefined);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return refused();
    let read: SmallFile | undefined;
    try {
      read = readSmallFile(file, this.readBuffer, cache !== undefined);
    } catch (error) {
      if (isUnreadable(error)) return refused();
      throw error;
    }
    // Nothing a boot interface renders is empty (an empty answer would be a FIFO or a stray file).
    if (read === undefined || read.content === '') return refused();
    // A file written moments ago is read until its times are old enough; while it reads the same, it stays held.
    if (cache && read.stats && held?.content !== read.content) {
      this.heldNames.add(name);
      cache.remember(file, read.content, read.stats);
    }
    return read.content;
  }

  /**
   * Writes the node's file `name` by rename unless it already holds
   * `content`, and notes it for the read cache (noteWritten). With
   * `newDirectory` (the node directory was just made, so it holds nothing
   * to compare with) the file is written without reading it first. Returns
   * whether it wrote.
   */
  async writeNodeFile(
    nodeUuid: string,
    name: string,
    content: string,
    options: { newDirectory?: boolean } = {},
  ): Promise<boolean> {
    const path = this.nodeFile(nodeUuid, name);
    let written = true;
    if (options.newDirectory) await writeFileAtomically(path, content, { directoryExists: true });
    else written = await writeFileIfChanged(path, content);
    this.noteWritten(nodeUuid, name, content);
    return written;
  }

  /**
   * Tells the read cache that the boot interface just wrote `content` as
   * the node's file `name` (or found it there): the first boot request for
   * it need not read it. Until the file's times are RACY_MS old, a request
   * still reads the file and compares. A no-op with the cache off.
   */
  noteWritten(nodeUuid: string, name: string, content: string): void {
    if (this.cache === undefined) return;
    this.heldNames.add(name);
    this.cache.rememberWritten(this.nodeFile(nodeUuid, name), content);
  }

  /**
   * Removes the node's file `name` (if there) and forgets it: with a check
   * interval, a file removed behind the cache's back could be served from
   * memory until the interval ends.
   */
  async removeNodeFile(nodeUuid: string, name: string): Promise<void> {
    const path = this.nodeFile(nodeUuid, name);
    await removeIfPresent(path);
    // After the removal: a read while it was under way may have kept the file again.
    this.cache?.forget(path);
  }

  /** Removes the node directory with all it holds, and forgets its files. */
  async removeNodeDir(nodeUuid: string): Promise<void> {
    const dir = this.nodeDir(nodeUuid);
    await rm(dir, { recursive: true, force: true });
    for (const name of this.heldNames) this.cache?.forget(fileIn(dir, name));
  }
}

/** What lstat shows of a file that tells it apart from any other file or any later content of it. */
interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

interface HeldFile extends FileIdentity {
  content: string;
  /** When the content may be served without reading the file: RACY_MS after its last change. */
  trustedFrom: number;
  /** When its identity was last found (by a read, a note or an lstat). */
  checkedAt: number;
}

/**
 * Files under the root as last read or written, each kept with its
 * identity, like nginx's open_file_cache: a later read serves the content
 * from memory when lstat of the same path shows the same device, inode,
 * size and modification and change times. Every rewrite by a boot
 * interface is a rename (a new inode); an edit in place moves the change
 * time, which no one can set back. A path that now leads elsewhere (the
 * node directory swapped for a link, the file for a link or another file)
 * shows another inode, and the checked read runs again: nothing is served
 * that was not read through a path without links, or written there.
 *
 * Time stamps are as fine as the file system's clock tick: a second change
 * within the tick of the first could leave both times as they were. So, as
 * git treats a racily clean index, a file read within RACY_MS of its last
 * change is not kept, and one noted as written is not trusted until then
 * (each request reads and compares it meanwhile). Linux 6.13 and later
 * give a change after a stat a time of its own on ext4, XFS, btrfs and
 * tmpfs, which closes the rest. The oldest files go first when the bytes
 * would pass the bound.
 *
 * With a check interval, like nginx's open_file_cache_valid, a file found
 * unchanged is served without the lstat until the interval has passed: a
 * change made behind the layout's back (an edit by hand, a link planted)
 * shows that much later, and what is served meanwhile is still only what
 * was read through a path without links or written there. Changes made
 * through the layout (writeNodeFile, removeNodeFile, removeNodeDir) show at
 * once. On a virtual machine where a system call costs microseconds, the
 * lstat was 40 % of a conductor's CPU per boot call (docs/performance.md).
 */
class NodeFileCache {
  private readonly files = new Map<string, HeldFile>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly checkIntervalMs: number,
    private readonly now: () => number,
  ) {}

  /** The entry of `path` if the path still names that very file (or did, within the check interval); else it is dropped. */
  matching(path: string, now: number): HeldFile | undefined {
    const held = this.files.get(path);
    if (held === undefined) return undefined;
    if (now - held.checkedAt < this.checkIntervalMs) return held;
    const stats = lstatSync(path, { throwIfNoEntry: false });
    if (
      stats !== undefined &&
      stats.ino === held.ino &&
      stats.mtimeMs === held.mtimeMs &&
      stats.ctimeMs === held.ctimeMs &&
      stats.size === held.size &&
      stats.dev === held.dev &&
      stats.isFile()
    ) {
      held.checkedAt = now;
      return held;
    }
    this.drop(path, held);
    return undefined;
  }

  /** What was just read from an open descriptor, with that descriptor's identity: kept unless it changed too recently. */
  remember(path: string, content: string, stats: Stats): void {
    this.forget(path);
    if (trustedFrom(stats) <= this.now()) this.keep(path, content, stats);
  }

  /** What this process just wrote at `path` (a regular file of that many bytes there now). */
  rememberWritten(path: string, content: string): void {
    this.forget(path);
    const stats = lstatSync(path, { throwIfNoEntry: false });
    if (stats === undefined || !stats.isFile() || stats.size !== Buffer.byteLength(content)) return;
    this.keep(path, content, stats);
  }

  size(): { files: number; bytes: number } {
    return { files: this.files.size, bytes: this.bytes };
  }

  private keep(path: string, content: string, stats: Stats): void {
    if (content.length > this.maxBytes) return;
    const { dev, ino, size, mtimeMs, ctimeMs } = stats;
    const entry = { content, dev, ino, size, mtimeMs, ctimeMs, trustedFrom: trustedFrom(stats), checkedAt: this.now() };
    this.files.set(path, entry);
    this.bytes += content.length;
    for (const [oldest, file] of this.files) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest, file);
    }
  }

  /** Drops the entry of `path`, if any. */
  forget(path: string): undefined {
    const held = this.files.get(path);
    if (held) this.drop(path, held);
    return undefined;
  }

  private drop(path: string, held: HeldFile): void {
    this.files.delete(path);
    this.bytes -= held.content.length;
  }
}

/**
 * How recently a file may have changed and still be kept: wider than the
 * coarsest time stamps a file system here may keep (a jiffy on ext4 and
 * XFS, two seconds on FAT).
 */
const RACY_MS = 3000;

/** When a file with these times may be served without reading it: RACY_MS after its last change. */
function trustedFrom(stats: Stats): number {
  return Math.max(stats.mtimeMs, stats.ctimeMs) + RACY_MS;
}

/** `name` in `dir`: a checked name is one plain segment, so appending it is what join() would give. */
function fileIn(dir: string, name: string): string {
  if (!FILE_NAME.test(name)) throw new Error(`not a file name: ${JSON.stringify(name)}`);
  return dir + sep + name;
}

interface SmallFile {
  content: string;
  /** The open file's identity, when asked for. */
  stats?: Stats;
}

/**
 * The file at `path` as UTF-8, through `buffer`: one read when it is shorter
 * than the buffer. A read that fills the buffer may not have reached the
 * end: the rest follows, and the bytes are decoded together (a character
 * may straddle the buffer's end). A plain read, not pread: a FIFO has no
 * offset to read at. With `identify`, the descriptor's fstat comes first
 * (what the content is remembered with; a later change can only make it
 * look newer) and anything but a regular file is undefined.
 */
function readSmallFile(path: string, buffer: Buffer, identify: boolean): SmallFile | undefined {
  const fd = openSync(path, NO_FOLLOW_READ);
  try {
    const stats = identify ? fstatSync(fd) : undefined;
    if (stats && !stats.isFile()) return undefined;
    const read = readSync(fd, buffer, 0, buffer.length, null);
    const content =
      read < buffer.length
        ? buffer.toString('utf8', 0, read)
        : Buffer.concat([buffer, readFileSync(fd)]).toString('utf8');
    return stats ? { content, stats } : { content };
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
