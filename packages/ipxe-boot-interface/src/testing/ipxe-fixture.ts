import type { BmaasConfig } from '@bmaas/common';
import { createHttpRootFixture } from '@bmaas/http-root/testing';
import { IpxeBootInterface } from '../ipxe-boot.js';
import type { IpxeConfig } from '../ipxe-config.js';
import { type IpxeTestOverrides, testConfig, testDeps } from './test-config.js';

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
  const root = await createHttpRootFixture('bmaas-ipxe-');
  const config = testConfig({
    ...overrides,
    deploy: { http_root: root.httpRoot, http_url: 'http://192.0.2.10:8080', ...overrides.deploy },
    api: { public_endpoint: 'http://192.0.2.1:6385', ...overrides.api },
    conductor: { file_url_allowed_paths: [root.imagesDir], ...overrides.conductor },
  });
  return { ...root, iface: new IpxeBootInterface(testDeps(config)), config };
}
