import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  linkIfChanged,
  lstatIfPresent,
  readLinkIfPresent,
  removeIfPresent,
  replaceLink,
  writeFileAtomically,
  writeFileIfChanged,
} from './atomic-files.js';

describe('atomic files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-atomic-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('writes only when the content changes, leaving no temporary file', async () => {
    const path = join(dir, 'sub', 'config');
    expect(await writeFileIfChanged(path, 'one')).toBe(true);
    const first = await stat(path);
    expect(await writeFileIfChanged(path, 'one')).toBe(false);
    expect((await stat(path)).ino).toBe(first.ino);
    expect(await writeFileIfChanged(path, 'two')).toBe(true);
    expect((await stat(path)).ino).not.toBe(first.ino);
    expect(await readFile(path, 'utf8')).toBe('two');
    expect(await readdir(join(dir, 'sub'))).toEqual(['config']);
  });

  it('never lets a reader see a partial file across many rewrites', async () => {
    const path = join(dir, 'config');
    const versions = ['a'.repeat(256 * 1024), 'b'.repeat(300 * 1024)];
    await writeFileAtomically(path, versions[0] as string);
    let writing = true;
    const seen = new Set<number>();
    const reader = (async () => {
      let reads = 0;
      while (writing || reads < 50) {
        const content = await readFile(path, 'utf8');
        const version = versions.indexOf(content);
        expect(version, `read of ${content.length} characters`).not.toBe(-1);
        seen.add(version);
        reads++;
      }
      return reads;
    })();
    for (let i = 1; i <= 200; i++) await writeFileAtomically(path, versions[i % 2] as string);
    writing = false;
    expect(await reader).toBeGreaterThan(0);
    expect(seen.size).toBeGreaterThan(0);
    expect(await readdir(dir)).toEqual(['config']);
  });

  it('removes its temporary file when the rename fails, and keeps what was there', async () => {
    const path = join(dir, 'taken');
    await mkdir(path);
    await writeFile(join(path, 'inside'), 'x');
    await expect(writeFileAtomically(path, 'content')).rejects.toThrow();
    expect(await readdir(dir)).toEqual(['taken']);
    expect(await readdir(path)).toEqual(['inside']);
  });

  it('replaces links atomically and reports whether anything changed', async () => {
    const path = join(dir, 'links', '52-54-00-12-34-56');
    expect(await linkIfChanged('../a/config', path)).toBe(true);
    expect(await linkIfChanged('../a/config', path)).toBe(false);
    expect(await linkIfChanged('../b/config', path)).toBe(true);
    expect(await readLinkIfPresent(path)).toBe('../b/config');
    expect(await readdir(join(dir, 'links'))).toEqual(['52-54-00-12-34-56']);
  });

  it('replaces whatever is at a path by a link without reading it, making the directory only when missing', async () => {
    const path = join(dir, 'links', '52-54-00-12-34-56');
    await replaceLink('../a/config', path);
    expect(await readLinkIfPresent(path)).toBe('../a/config');
    await replaceLink('../b/config', path);
    expect(await readLinkIfPresent(path)).toBe('../b/config');
    await rm(path);
    await writeFile(path, 'a file in the way');
    await replaceLink('../c/config', path);
    expect(await readLinkIfPresent(path)).toBe('../c/config');
    expect(await readdir(join(dir, 'links'))).toEqual(['52-54-00-12-34-56']);
    await rm(join(dir, 'links'), { recursive: true });
    await replaceLink('../d/config', path);
    expect(await readLinkIfPresent(path)).toBe('../d/config');
  });

  it('makes no directory when told it exists', async () => {
    const path = join(dir, 'made-by-the-caller', 'config');
    await expect(writeFileAtomically(path, 'x', { directoryExists: true })).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(dir)).toEqual([]);
    await mkdir(join(dir, 'made-by-the-caller'));
    await writeFileAtomically(path, 'x', { directoryExists: true });
    expect(await readFile(path, 'utf8')).toBe('x');
  });

  it('lstats without following a link, and finds nothing where a path is missing or runs through a file', async () => {
    await writeFile(join(dir, 'file'), 'x');
    await symlink('file', join(dir, 'link'));
    expect(lstatIfPresent(join(dir, 'file'))?.isFile()).toBe(true);
    expect(lstatIfPresent(join(dir, 'link'))?.isSymbolicLink()).toBe(true);
    expect(lstatIfPresent(join(dir, 'nothing'))).toBeUndefined();
    expect(lstatIfPresent(join(dir, 'file', 'below'))).toBeUndefined();
  });

  it('treats missing files and non-links as absent', async () => {
    await removeIfPresent(join(dir, 'nothing'));
    await removeIfPresent(join(dir, 'no-dir', 'nothing'));
    await writeFile(join(dir, 'file'), 'x');
    expect(await readLinkIfPresent(join(dir, 'file'))).toBeUndefined();
    expect(await readLinkIfPresent(join(dir, 'nothing'))).toBeUndefined();
  });
});
