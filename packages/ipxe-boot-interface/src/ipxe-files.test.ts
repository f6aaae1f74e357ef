import { dirname, resolve } from 'node:path';
import { ConfigError, InvalidMAC, InvalidUUID } from '@bmaas/common';
import { HttpRootLayout } from '@bmaas/http-root';
import { describe, expect, it } from 'vitest';
import { IpxeFiles } from './ipxe-files.js';

const NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';

describe('IpxeFiles', () => {
  const files = new IpxeFiles(new HttpRootLayout('/srv/http/'), 'pxelinux.cfg');

  it('places every file under the root', () => {
    expect(files.rootScript).toBe('/srv/http/boot.ipxe');
    expect(files.nodeScript(NODE)).toBe(`/srv/http/${NODE}/config`);
    expect(files.macLink('52:54:00:AB:cd:0f')).toBe('/srv/http/pxelinux.cfg/52-54-00-ab-cd-0f');
  });

  it.each(['pxelinux.cfg', 'ipxe/by-mac/', './links'])('links from %s reach the node script', (subdir) => {
    const nested = new IpxeFiles(new HttpRootLayout('/srv/http'), subdir);
    const link = nested.macLink('52:54:00:12:34:56');
    const target = nested.macLinkTarget(NODE);
    expect(target.startsWith('/')).toBe(false);
    expect(resolve(dirname(link), target)).toBe(nested.nodeScript(NODE));
  });

  it('refuses anything that is not a uuid or a MAC', () => {
    expect(() => files.nodeScript(`${NODE}/..`)).toThrow(InvalidUUID);
    expect(() => files.macLink('../../etc/passwd')).toThrow(InvalidMAC);
  });

  it.each(['', '.', '/etc', '../outside', 'a/../../b'])('refuses the links directory %j', (subdir) => {
    expect(() => new IpxeFiles(new HttpRootLayout('/srv/http'), subdir)).toThrow(ConfigError);
  });
});
