import { dirname, resolve } from 'node:path';
import { ConfigError, InvalidMAC, InvalidUUID } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { HttpRootLayout } from './http-root-layout.js';
import { testConfig } from './test-config.test-support.js';

const NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';

describe('HttpRootLayout', () => {
  const layout = new HttpRootLayout('/srv/http/', 'pxelinux.cfg');

  it('places every file under the root', () => {
    expect(layout.rootScript).toBe('/srv/http/boot.ipxe');
    expect(layout.nodeDir(NODE.toUpperCase())).toBe(`/srv/http/${NODE}`);
    expect(layout.nodeScript(NODE)).toBe(`/srv/http/${NODE}/config`);
    expect(layout.nodeImage(NODE, 'rescue_ramdisk')).toBe(`/srv/http/${NODE}/rescue_ramdisk`);
    expect(layout.macLink('52:54:00:AB:cd:0f')).toBe('/srv/http/pxelinux.cfg/52-54-00-ab-cd-0f');
    expect(layout.macLink('52%3A54%3A00%3Aab%3Acd%3A0f')).toBe('/srv/http/pxelinux.cfg/52-54-00-ab-cd-0f');
  });

  it.each(['pxelinux.cfg', 'ipxe/by-mac/', './links'])('links from %s reach the node script', (subdir) => {
    const nested = new HttpRootLayout('/srv/http', subdir);
    const link = nested.macLink('52:54:00:12:34:56');
    const target = nested.macLinkTarget(NODE);
    expect(target.startsWith('/')).toBe(false);
    expect(resolve(dirname(link), target)).toBe(nested.nodeScript(NODE));
  });

  it('refuses anything that is not a uuid or a MAC', () => {
    expect(() => layout.nodeDir('../etc')).toThrow(InvalidUUID);
    expect(() => layout.nodeScript(`${NODE}/..`)).toThrow(InvalidUUID);
    expect(() => layout.macLink('../../etc/passwd')).toThrow(InvalidMAC);
  });

  it.each(['', '.', '/etc', '../outside', 'a/../../b'])('refuses the links directory %j', (subdir) => {
    expect(() => new HttpRootLayout('/srv/http', subdir)).toThrow(ConfigError);
  });

  it('is built from [deploy]http_root and [pxe]pxe_config_subdir', () => {
    const fromConfig = HttpRootLayout.fromConfig(
      testConfig({ deploy: { http_root: '/var/lib/boot' }, pxe: { pxe_config_subdir: 'macs' } }),
    );
    expect(fromConfig.macLink('52:54:00:12:34:56')).toBe('/var/lib/boot/macs/52-54-00-12-34-56');
  });
});
