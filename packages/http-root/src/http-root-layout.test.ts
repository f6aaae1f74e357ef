import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, InvalidMAC, InvalidUUID } from '@bmaas/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HttpRootLayout } from './http-root-layout.js';

const NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';

describe('HttpRootLayout', () => {
  const layout = new HttpRootLayout('/srv/http/');

  it('places every file under the root', () => {
    expect(layout.file('boot.ipxe')).toBe('/srv/http/boot.ipxe');
    expect(layout.file('grub/grub.cfg')).toBe('/srv/http/grub/grub.cfg');
    expect(layout.nodeDir(NODE.toUpperCase())).toBe(`/srv/http/${NODE}`);
    expect(layout.nodeFile(NODE, 'config')).toBe(`/srv/http/${NODE}/config`);
    expect(layout.nodeImage(NODE, 'rescue_ramdisk')).toBe(`/srv/http/${NODE}/rescue_ramdisk`);
    const links = layout.subdir('pxelinux.cfg', '[pxe]pxe_config_subdir');
    expect(layout.macFile(links, '52:54:00:AB:cd:0f')).toBe('/srv/http/pxelinux.cfg/52-54-00-ab-cd-0f');
    expect(layout.macFile(links, '52%3A54%3A00%3Aab%3Acd%3A0f')).toBe('/srv/http/pxelinux.cfg/52-54-00-ab-cd-0f');
  });

  it.each(['/', '/srv//http/', 'relative/root'])('builds node paths as path.join does, from the root %j', (root) => {
    const other = new HttpRootLayout(root);
    expect(other.nodeDir(NODE)).toBe(join(resolve(root), NODE));
    expect(other.nodeFile(NODE.toUpperCase(), 'boot.ipxe')).toBe(join(resolve(root), NODE, 'boot.ipxe'));
  });

  it.each(['pxelinux.cfg', 'ipxe/by-mac/', './links'])('relative links from %s reach a node file', (path) => {
    const dir = layout.subdir(path, 'option');
    const target = layout.relativeFrom(dir, layout.nodeFile(NODE, 'config'));
    expect(target.startsWith('/')).toBe(false);
    expect(resolve(dirname(layout.macFile(dir, '52:54:00:12:34:56')), target)).toBe(layout.nodeFile(NODE, 'config'));
  });

  it('refuses anything that is not a uuid, a MAC or a plain name', () => {
    expect(() => layout.nodeDir('../etc')).toThrow(InvalidUUID);
    expect(() => layout.nodeFile(`${NODE}/..`, 'config')).toThrow(InvalidUUID);
    expect(() => layout.nodeFile(NODE, '../config')).toThrow();
    expect(() => layout.file('../passwd')).toThrow();
    expect(() => layout.file('/etc/passwd')).toThrow();
    expect(() => layout.macFile('/srv/http/x', '../../etc/passwd')).toThrow(InvalidMAC);
  });

  it.each(['', '.', '/etc', '../outside', 'a/../../b'])('refuses the directory %j, naming the option', (subdir) => {
    expect(() => layout.subdir(subdir, '[pxe]pxe_config_subdir')).toThrow(ConfigError);
    expect(() => layout.subdir(subdir, '[pxe]pxe_config_subdir')).toThrow(/\[pxe\]pxe_config_subdir/);
  });
});

describe('HttpRootLayout.readNodeFile', () => {
  let dir: string;
  let layout: HttpRootLayout;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-layout-'));
    layout = new HttpRootLayout(join(dir, 'root'));
    await mkdir(layout.root);
    await writeFile(join(dir, 'secret'), 'outside the root\n');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('reads a node file, and finds nothing where there is none', async () => {
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    await mkdir(layout.nodeDir(NODE));
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\n');
  });

  it('follows no symbolic link: neither the file nor the node directory', async () => {
    await mkdir(layout.nodeDir(NODE));
    await symlink(join(dir, 'secret'), layout.nodeFile(NODE, 'config'));
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();

    const other = '2be26c0b-03f2-4d2e-ae87-c02d7f33c123';
    await mkdir(join(dir, 'elsewhere'));
    await writeFile(join(dir, 'elsewhere', 'config'), 'outside the root\n');
    await symlink(join(dir, 'elsewhere'), layout.nodeDir(other));
    expect(layout.readNodeFile(other, 'config')).toBeUndefined();
  });

  it('reads a file longer than its read buffer whole, and a short one after it without what the long one left', async () => {
    await mkdir(layout.nodeDir(NODE));
    // Multi-byte characters across the buffer's end (64 KiB) must come out whole.
    const long = `#!ipxe\n${'é'.repeat(40_000)}\n${'x'.repeat(70_000)}\nboot\n`;
    await writeFile(layout.nodeFile(NODE, 'config'), long);
    expect(layout.readNodeFile(NODE, 'config')).toBe(long);
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\nboot\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\nboot\n');
    const exact = 'y'.repeat(64 * 1024);
    await writeFile(layout.nodeFile(NODE, 'config'), exact);
    expect(layout.readNodeFile(NODE, 'config')).toBe(exact);
  });

  it('answers nothing for an empty file or a FIFO, without waiting for a writer', async () => {
    await mkdir(layout.nodeDir(NODE));
    await writeFile(layout.nodeFile(NODE, 'config'), '');
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    await rm(layout.nodeFile(NODE, 'config'));
    execFileSync('mkfifo', [layout.nodeFile(NODE, 'config')]);
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
  });

  it('reads no directory or other non-file', async () => {
    await mkdir(join(layout.nodeDir(NODE), 'config'), { recursive: true });
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
  });
});
