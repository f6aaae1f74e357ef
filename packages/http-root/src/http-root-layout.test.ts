import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, InvalidMAC, InvalidUUID } from '@bmaas/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HttpRootLayout, readCacheOptionsOf } from './http-root-layout.js';

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

describe('HttpRootLayout.readNodeFile with the read cache', () => {
  const LATER = 60_000;
  let dir: string;
  /** A clock a minute ahead: every file read is old enough to be kept. */
  let layout: HttpRootLayout;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-layout-cache-'));
    layout = new HttpRootLayout(join(dir, 'root'), { readCacheBytes: 1024, now: () => Date.now() + LATER });
    await mkdir(layout.nodeDir(NODE), { recursive: true });
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const past = new Date('2026-01-01T00:00:00Z');

  /** Rewrites `file` as the boot interfaces do: a new file renamed over it (a new inode). */
  async function rewriteByRename(file: string, content: string): Promise<void> {
    await writeFile(`${file}.new`, content);
    await rename(`${file}.new`, file);
  }

  /** Swaps the node directory for a link to a directory outside the root holding `content` as its config. */
  async function plantLink(on: HttpRootLayout, content: string): Promise<void> {
    await mkdir(join(dir, 'elsewhere'));
    await writeFile(join(dir, 'elsewhere', 'config'), content);
    await rename(on.nodeDir(NODE), join(dir, 'moved'));
    await symlink(join(dir, 'elsewhere'), on.nodeDir(NODE));
  }

  it('serves a file again from memory while it is unchanged', async () => {
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\none\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(layout.cached).toEqual({ files: 1, bytes: 11 });
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(layout.cached).toEqual({ files: 1, bytes: 11 });
  });

  it('reads the file again after a rewrite by rename, an edit in place of the same size, or a removal', async () => {
    const file = layout.nodeFile(NODE, 'config');
    await writeFile(file, '#!ipxe\none\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');

    await rewriteByRename(file, '#!ipxe\ntwo\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\ntwo\n');

    // Same inode and size, and a modification time set back by hand: the times still differ from the kept ones.
    await utimes(file, past, past);
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\ntwo\n');
    await writeFile(file, '#!ipxe\nsix\n');
    await utimes(file, past, new Date(past.getTime() + 1000));
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\nsix\n');

    await rm(file);
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    expect(layout.cached).toEqual({ files: 0, bytes: 0 });
  });

  it('serves no file from elsewhere through a link, however alike', async () => {
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\none\n');
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    // The very same content and size, reached through the link.
    await plantLink(layout, '#!ipxe\none\n');
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    // The file read before, reached through a link once its entry is gone: the checked read refuses it.
    await rm(layout.nodeDir(NODE));
    await symlink(join(dir, 'moved'), layout.nodeDir(NODE));
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
  });

  it('does not keep a file changed moments before it was read', async () => {
    const now = new HttpRootLayout(layout.root, { readCacheBytes: 1024 });
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\none\n');
    expect(now.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(now.cached.files).toBe(0);
    await utimes(layout.nodeFile(NODE, 'config'), past, past);
    // The change time is still now (utimes sets it): still not kept.
    expect(now.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(now.cached.files).toBe(0);
  });

  it('keeps at most its bound, dropping the oldest first, and nothing larger than the bound', async () => {
    const nodes = Array.from({ length: 5 }, (_, i) => `${i}be26c0b-03f2-4d2e-ae87-c02d7f33c123`);
    for (const node of nodes) {
      await mkdir(layout.nodeDir(node), { recursive: true });
      await writeFile(layout.nodeFile(node, 'config'), `${`#!ipxe\n${node}\n`.padEnd(299, '#')}\n`);
    }
    for (const node of nodes) expect(layout.readNodeFile(node, 'config')).toHaveLength(300);
    expect(layout.cached).toEqual({ files: 3, bytes: 900 });
    for (const node of nodes) expect(layout.readNodeFile(node, 'config')).toContain(node);

    await writeFile(layout.nodeFile(NODE, 'config'), 'x'.repeat(2000));
    expect(layout.readNodeFile(NODE, 'config')).toHaveLength(2000);
    expect(layout.cached.bytes).toBeLessThanOrEqual(1024);
  });

  it('serves what the boot interface noted as written without reading it, once its times are old enough', async () => {
    const file = layout.nodeFile(NODE, 'config');
    await writeFile(file, '#!ipxe\none\n');
    // Noted as another content of the same size: what is served shows where it came from.
    layout.noteWritten(NODE, 'config', '#!ipxe\nTWO\n');
    expect(layout.cached).toEqual({ files: 1, bytes: 11 });
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\nTWO\n');
    // Not a file of that size there: nothing kept.
    layout.noteWritten(NODE, 'config', '#!ipxe\nlonger\n');
    expect(layout.cached.files).toBe(0);
    layout.noteWritten(NODE, 'missing', '#!ipxe\n');
    expect(layout.cached.files).toBe(0);
  });

  it('writes a node file by rename unless it holds the same, and notes it for the read cache', async () => {
    const file = layout.nodeFile(NODE, 'config');
    await writeFile(file, '#!ipxe\none\n');
    expect(await layout.writeNodeFile(NODE, 'config', '#!ipxe\none\n')).toBe(false);
    expect(layout.cached).toEqual({ files: 1, bytes: 11 });
    expect(await layout.writeNodeFile(NODE, 'config', '#!ipxe\ntwo\n')).toBe(true);
    expect(await readFile(file, 'utf8')).toBe('#!ipxe\ntwo\n');
    expect(layout.cached).toEqual({ files: 1, bytes: 11 });
    // The clock is a minute ahead: served from the note, as written.
    expect(layout.readNodeFile(NODE, 'config')).toBe('#!ipxe\ntwo\n');

    // A new node directory: written without a read, noted the same.
    const other = '2be26c0b-03f2-4d2e-ae87-c02d7f33c123';
    await mkdir(layout.nodeDir(other));
    expect(await layout.writeNodeFile(other, 'config', '#!ipxe\nnew\n', { newDirectory: true })).toBe(true);
    expect(await readFile(layout.nodeFile(other, 'config'), 'utf8')).toBe('#!ipxe\nnew\n');
    expect(layout.cached.files).toBe(2);
  });

  it('reads and compares a file noted as written while its times are recent, and keeps it while it reads the same', async () => {
    const now = new HttpRootLayout(layout.root, { readCacheBytes: 1024 });
    const file = layout.nodeFile(NODE, 'config');
    await writeFile(file, '#!ipxe\none\n');
    now.noteWritten(NODE, 'config', '#!ipxe\none\n');
    expect(now.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(now.cached.files).toBe(1);
    // Changed in place within the same tick, same size: the recent times make the read go to the file.
    now.noteWritten(NODE, 'config', '#!ipxe\nTWO\n');
    expect(now.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(now.cached.files).toBe(0);
  });

  it('forgets a noted file that the checked read refuses, so it is not served through a link later', async () => {
    let offset = 0;
    const clocked = new HttpRootLayout(layout.root, { readCacheBytes: 1024, now: () => Date.now() + offset });
    await writeFile(clocked.nodeFile(NODE, 'config'), '#!ipxe\none\n');
    clocked.noteWritten(NODE, 'config', '#!ipxe\none\n');
    expect(clocked.cached.files).toBe(1);
    // The very file, its directory now reached through a link: the identity matches, the checked read refuses.
    await rename(clocked.nodeDir(NODE), join(dir, 'moved'));
    await symlink(join(dir, 'moved'), clocked.nodeDir(NODE));
    expect(clocked.readNodeFile(NODE, 'config')).toBeUndefined();
    expect(clocked.cached.files).toBe(0);
    offset = LATER;
    expect(clocked.readNodeFile(NODE, 'config')).toBeUndefined();
  });

  describe('with a check interval', () => {
    let offset: number;
    let checked: HttpRootLayout;
    beforeEach(() => {
      offset = LATER;
      checked = new HttpRootLayout(layout.root, {
        readCacheBytes: 1024,
        readCacheCheckIntervalMs: 2000,
        now: () => Date.now() + offset,
      });
    });

    it('serves a held file without looking at it until the interval has passed, then sees the change', async () => {
      const file = checked.nodeFile(NODE, 'config');
      await writeFile(file, '#!ipxe\none\n');
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
      await rewriteByRename(file, '#!ipxe\ntwo\n');
      offset += 1900;
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
      offset += 200;
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\ntwo\n');
      // Found unchanged: served from memory for another interval, counted from that check.
      await rm(file);
      offset += 1900;
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\ntwo\n');
      offset += 200;
      expect(checked.readNodeFile(NODE, 'config')).toBeUndefined();
    });

    it('serves nothing from a link planted meanwhile: what it held, then nothing', async () => {
      await writeFile(checked.nodeFile(NODE, 'config'), '#!ipxe\none\n');
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
      await plantLink(checked, '#!ipxe\nBAD\n');
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
      offset += 2000;
      expect(checked.readNodeFile(NODE, 'config')).toBeUndefined();
    });

    it('forgets at once what it removes: a node file, a node directory', async () => {
      await writeFile(checked.nodeFile(NODE, 'config'), '#!ipxe\none\n');
      await writeFile(checked.nodeFile(NODE, 'grub.cfg'), 'set default=0\n');
      expect(checked.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
      expect(checked.readNodeFile(NODE, 'grub.cfg')).toBe('set default=0\n');
      await checked.removeNodeFile(NODE, 'config');
      await checked.removeNodeFile(NODE, 'config');
      expect(checked.readNodeFile(NODE, 'config')).toBeUndefined();
      expect(checked.readNodeFile(NODE, 'grub.cfg')).toBe('set default=0\n');
      await checked.removeNodeDir(NODE);
      await checked.removeNodeDir(NODE);
      expect(checked.readNodeFile(NODE, 'grub.cfg')).toBeUndefined();
      await expect(readFile(checked.nodeFile(NODE, 'grub.cfg'))).rejects.toThrow(/ENOENT/);
      expect(checked.cached.files).toBe(0);
    });

    it('takes its settings from [deploy] in seconds', () => {
      expect(readCacheOptionsOf({ boot_config_cache_bytes: 4096, boot_config_cache_check_interval: 2 })).toEqual({
        readCacheBytes: 4096,
        readCacheCheckIntervalMs: 2000,
      });
    });
  });

  it('reads every time with a bound of 0', async () => {
    const uncached = new HttpRootLayout(layout.root, { readCacheBytes: 0, now: () => Date.now() + LATER });
    await writeFile(layout.nodeFile(NODE, 'config'), '#!ipxe\none\n');
    expect(uncached.readNodeFile(NODE, 'config')).toBe('#!ipxe\none\n');
    expect(uncached.cached).toEqual({ files: 0, bytes: 0 });
  });

  it('answers nothing for a FIFO or a directory, and keeps neither', async () => {
    execFileSync('mkfifo', [layout.nodeFile(NODE, 'config')]);
    expect(layout.readNodeFile(NODE, 'config')).toBeUndefined();
    await mkdir(layout.nodeFile(NODE, 'grub.cfg'));
    expect(layout.readNodeFile(NODE, 'grub.cfg')).toBeUndefined();
    expect(layout.cached.files).toBe(0);
  });
});
