import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { BmaasConfig } from '@bmaas/common';
import { IpxeBootInterface } from './ipxe-boot.js';
import type { IpxeConfig } from './ipxe-config.js';
import { type IpxeTestOverrides, testConfig, testDeps } from './test-config.test-support.js';

export interface IpxeFixture {
  iface: IpxeBootInterface;
  config: BmaasConfig & IpxeConfig;
  httpRoot: string;
  /** driver_info naming local deploy and rescue images. */
  driverInfo: Record<string, string>;
  /** Every entry under http_root: files with inode and content, links with inode and target. */
  snapshot(): Promise<Record<string, string>>;
  cleanup(): Promise<void>;
}

/** An ipxe interface over a fresh temporary http_root, with local images for both ramdisks. */
export async function createIpxeFixture(overrides: IpxeTestOverrides = {}): Promise<IpxeFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'bmaas-ipxe-'));
  const httpRoot = join(dir, 'httpboot');
  const images = join(dir, 'images');
  await mkdir(images);
  const driverInfo: Record<string, string> = {};
  for (const name of ['deploy_kernel', 'deploy_ramdisk', 'rescue_kernel', 'rescue_ramdisk']) {
    driverInfo[name] = join(images, `${name}.img`);
    await writeFile(driverInfo[name], `${name} bytes`);
  }
  const config = testConfig({
    ...overrides,
    deploy: { http_root: httpRoot, http_url: 'http://192.0.2.10:8080', ...overrides.deploy },
    api: { public_endpoint: 'http://192.0.2.1:6385', ...overrides.api },
    conductor: { file_url_allowed_paths: [images], ...overrides.conductor },
  });
  const iface = new IpxeBootInterface(testDeps(config));
  return {
    iface,
    config,
    httpRoot,
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
