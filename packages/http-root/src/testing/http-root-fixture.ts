import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { BOOT_IMAGE_NAMES } from '../http-root-layout.js';

/** A temporary http_root and a directory of local images, for a boot interface's tests. */
export interface HttpRootFixture {
  /** The [deploy]http_root (not created: interfaces create it). */
  httpRoot: string;
  /** Holds the images: the [conductor]file_url_allowed_paths of the tests. */
  imagesDir: string;
  /** driver_info naming local deploy and rescue images (`<name> bytes` each). */
  driverInfo: Record<string, string>;
  /** Every entry under http_root: files with inode and content, links with inode and target, directories. */
  snapshot(): Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

export async function createHttpRootFixture(prefix = 'bmaas-http-root-'): Promise<HttpRootFixture> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const httpRoot = join(dir, 'httpboot');
  const imagesDir = join(dir, 'images');
  await mkdir(imagesDir);
  const driverInfo: Record<string, string> = {};
  for (const name of BOOT_IMAGE_NAMES) {
    driverInfo[name] = join(imagesDir, `${name}.img`);
    await writeFile(driverInfo[name], `${name} bytes`);
  }
  return {
    httpRoot,
    imagesDir,
    driverInfo,
    snapshot: () => snapshotTree(httpRoot),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

async function snapshotTree(root: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const child of children) {
      const path = join(dir, child.name);
      const key = relative(root, path);
      // The inode shows a rewrite of the same content: read-only and repeated calls must not rewrite.
      const { ino } = await lstat(path);
      if (child.isSymbolicLink()) entries[key] = `link ${ino} -> ${await readlink(path)}`;
      else if (child.isDirectory()) {
        entries[key] = 'dir';
        await walk(path);
      } else entries[key] = `file ${ino}: ${await readFile(path, 'utf8')}`;
    }
  };
  await walk(root);
  return entries;
}
