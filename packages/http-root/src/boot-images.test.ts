import { pbkdf2 } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvalidParameterValue } from '@bmaas/common';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AllowedImageDirs,
  checkLocalImage,
  checkLocalImageAllowed,
  parseImageSource,
  placeBootImage,
  placeCheckedLocalImage,
  redactUrl,
  removeBootImage,
} from './boot-images.js';
import { type ImageServer, startImageServer } from './testing/image-server.js';

const options = { key: 'deploy_kernel', downloadTimeoutMs: 10_000, allowedPaths: [tmpdir()] };

describe('parseImageSource', () => {
  it('reads paths, file URLs and http(s) URLs', () => {
    expect(parseImageSource('k', '/srv/images/../images/kernel')).toEqual({
      kind: 'local',
      path: '/srv/images/kernel',
    });
    expect(parseImageSource('k', 'file:///srv/images/my%20kernel')).toEqual({
      kind: 'local',
      path: '/srv/images/my kernel',
    });
    expect(parseImageSource('k', 'https://images.example.org/ipa.kernel')).toEqual({
      kind: 'http',
      url: 'https://images.example.org/ipa.kernel',
    });
  });

  it.each([
    '',
    'kernel',
    './kernel',
    '1be26c0b-03f2-4d2e-ae87-c02d7f33c123',
    'ftp://example.org/kernel',
    'file://host/share/kernel',
    'http://',
    42,
    null,
  ])('refuses %j', (value) => {
    expect(() => parseImageSource('deploy_kernel', value)).toThrow(InvalidParameterValue);
  });
});

describe('placeBootImage from this host', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-images-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('hard-links the file, once, and again when the file is replaced', async () => {
    const source = join(dir, 'ipa.kernel');
    const dest = join(dir, 'node', 'deploy_kernel');
    await writeFile(source, 'kernel v1');
    expect(await placeBootImage({ kind: 'local', path: source }, dest, options)).toBe('linked');
    expect((await stat(dest)).ino).toBe((await stat(source)).ino);
    expect(await placeBootImage({ kind: 'local', path: source }, dest, options)).toBe('unchanged');

    await writeFile(`${source}.new`, 'kernel v2');
    await rename(`${source}.new`, source);
    expect(await placeBootImage({ kind: 'local', path: source }, dest, options)).toBe('linked');
    expect(await readFile(dest, 'utf8')).toBe('kernel v2');
    expect(await readdir(join(dir, 'node'))).toEqual(['deploy_kernel']);
  });

  it('links the real file behind a symbolic link', async () => {
    await writeFile(join(dir, 'ipa.kernel-1.2'), 'kernel');
    await symlink('ipa.kernel-1.2', join(dir, 'ipa.kernel'));
    const dest = join(dir, 'node', 'deploy_kernel');
    await placeBootImage(parseImageSource('k', pathToFileURL(join(dir, 'ipa.kernel')).href), dest, options);
    expect((await lstat(dest)).isFile()).toBe(true);
    expect(await readFile(dest, 'utf8')).toBe('kernel');
  });

  it('copies across file systems, again only when the file changes', async () => {
    const other = await mkdtemp('/dev/shm/bmaas-images-');
    try {
      const source = join(other, 'ipa.kernel');
      await writeFile(source, 'kernel v1');
      const dest = join(dir, 'node', 'deploy_kernel');
      // /dev/shm is the one other file system here, and /dev is never allowed: past the check.
      const place = () => placeCheckedLocalImage(source, dest, 'deploy_kernel');
      expect(await place()).toBe('copied');
      expect((await lstat(dest)).isFile()).toBe(true);
      expect(await place()).toBe('unchanged');
      await writeFile(source, 'kernel v2');
      expect(await place()).toBe('copied');
      expect(await readFile(dest, 'utf8')).toBe('kernel v2');
      expect((await readdir(join(dir, 'node'))).sort()).toEqual(['.deploy_kernel.source.json', 'deploy_kernel']);
      await removeBootImage(dest);
      expect(await readdir(join(dir, 'node'))).toEqual([]);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('publishes no file from outside [conductor]file_url_allowed_paths, symbolic links resolved', async () => {
    const dest = join(dir, 'node', 'deploy_kernel');
    const allowed = join(dir, 'images');
    await mkdir(allowed);
    await writeFile(join(allowed, 'ipa.kernel'), 'kernel');
    await writeFile(join(dir, 'secret'), 'not an image');
    await symlink(join(dir, 'secret'), join(allowed, 'looks-like-an-image'));
    await symlink('/etc/passwd', join(allowed, 'passwd'));
    const only = { ...options, allowedPaths: [allowed] };

    expect(await placeBootImage({ kind: 'local', path: join(allowed, 'ipa.kernel') }, dest, only)).toBe('linked');
    for (const path of [
      '/etc/passwd',
      join(dir, 'secret'),
      join(allowed, 'looks-like-an-image'),
      join(allowed, '..', 'secret'),
      join(allowed, 'passwd'),
    ]) {
      const source = parseImageSource('deploy_kernel', pathToFileURL(path).href);
      await expect(placeBootImage(source, join(dir, 'node', 'other'), only), path).rejects.toThrow(
        InvalidParameterValue,
      );
    }
    await expect(checkLocalImageAllowed('deploy_kernel', join(dir, 'secret'), [allowed])).rejects.toThrow(
      /driver_info.deploy_kernel: .* is not under \[conductor\]file_url_allowed_paths/,
    );
    // /etc is refused even when an operator lists it, or lists /.
    for (const listed of [['/etc'], ['/']]) {
      await expect(checkLocalImageAllowed('deploy_kernel', '/etc/passwd', listed)).rejects.toThrow(/system directory/);
    }
    expect(await readdir(join(dir, 'node'))).toEqual(['deploy_kernel']);
  });

  it('places a checked file without checking it again, and never one that became a symbolic link since', async () => {
    const allowed = join(dir, 'images');
    await mkdir(allowed);
    const path = join(allowed, 'ipa.kernel');
    await writeFile(path, 'kernel');
    await writeFile(join(dir, 'secret'), 'not an image');
    const only = { ...options, allowedPaths: [allowed] };
    const checked = await checkLocalImage('deploy_kernel', path, [allowed]);
    expect(checked).toMatchObject({ real: path, ino: (await stat(path)).ino });

    const dest = join(dir, 'node', 'deploy_kernel');
    expect(await placeBootImage({ kind: 'local', path, checked }, dest, only)).toBe('linked');
    await rm(dest);
    // The image turns into a link to a file outside the allowed directory after its check.
    await rm(path);
    await symlink(join(dir, 'secret'), path);
    await expect(placeCheckedLocalImage(checked, dest, 'deploy_kernel')).rejects.toThrow(
      /ipa.kernel changed while it was being placed/,
    );
    // placeBootImage checks it again from driver_info's path, which leads outside.
    await expect(placeBootImage({ kind: 'local', path, checked }, dest, only)).rejects.toThrow(
      /is not under \[conductor\]file_url_allowed_paths/,
    );
    expect(await readdir(join(dir, 'node'))).toEqual([]);
  });

  it('places the new file when a checked one was replaced since its check, once checked', async () => {
    const path = join(dir, 'ipa.kernel');
    await writeFile(path, 'kernel v1');
    const checked = await checkLocalImage('deploy_kernel', path, [dir]);
    await writeFile(`${path}.new`, 'kernel v2');
    await rename(`${path}.new`, path);
    const dest = join(dir, 'node', 'deploy_kernel');
    expect(await placeBootImage({ kind: 'local', path, checked }, dest, options)).toBe('linked');
    expect(await readFile(dest, 'utf8')).toBe('kernel v2');
    await rm(path);
    await expect(placeBootImage({ kind: 'local', path, checked }, join(dir, 'node', 'other'), options)).rejects.toThrow(
      /does not exist/,
    );
    expect(await readdir(join(dir, 'node'))).toEqual(['deploy_kernel']);
  });

  it('takes an allowed directory listed through a symbolic link, resolved once per group of checks', async () => {
    const real = join(dir, 'images-1.2');
    await mkdir(real);
    await symlink(real, join(dir, 'images'));
    await writeFile(join(real, 'ipa.kernel'), 'kernel');
    await writeFile(join(real, 'ipa.initramfs'), 'ramdisk');
    const allowed = new AllowedImageDirs([join(dir, 'elsewhere'), join(dir, 'images')]);
    expect((await checkLocalImage('deploy_kernel', join(dir, 'images', 'ipa.kernel'), allowed)).real).toBe(
      join(real, 'ipa.kernel'),
    );
    // Resolved already: the link now leading elsewhere does not change this group's answer…
    await rm(join(dir, 'images'));
    await symlink(join(dir, 'elsewhere-2'), join(dir, 'images'));
    expect(await allowed.contain(join(real, 'ipa.initramfs'))).toBe(true);
    // …a new group resolves it again.
    await expect(checkLocalImage('deploy_ramdisk', join(real, 'ipa.initramfs'), [join(dir, 'images')])).rejects.toThrow(
      /is not under/,
    );
  });

  it('refuses a directory at the check', async () => {
    await expect(checkLocalImage('deploy_kernel', dir, [tmpdir()])).rejects.toThrow(/not a file/);
  });

  it('refuses a missing file or a directory', async () => {
    const dest = join(dir, 'node', 'deploy_kernel');
    await expect(placeBootImage({ kind: 'local', path: join(dir, 'nope') }, dest, options)).rejects.toThrow(
      InvalidParameterValue,
    );
    await expect(placeBootImage({ kind: 'local', path: dir }, dest, options)).rejects.toThrow(/not a file/);
  });
});

describe('placeBootImage over HTTP', () => {
  let server: ImageServer;
  let dir: string;
  beforeAll(async () => {
    server = await startImageServer();
  });
  afterAll(() => server.close());
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-downloads-'));
    server.images.clear();
    server.requests.length = 0;
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const dest = () => join(dir, 'node', 'deploy_kernel');
  const place = (path: string) => placeBootImage({ kind: 'http', url: `${server.url}${path}` }, dest(), options);

  it('downloads once while the ETag stays, again when it changes', async () => {
    server.images.set('/ipa.kernel', { body: Buffer.from('kernel v1'), etag: '"v1"' });
    expect(await place('/ipa.kernel')).toBe('downloaded');
    expect(await readFile(dest(), 'utf8')).toBe('kernel v1');
    expect(await place('/ipa.kernel')).toBe('unchanged');
    expect(server.requests.map((r) => r.ifNoneMatch)).toEqual([undefined, '"v1"']);

    server.images.set('/ipa.kernel', { body: Buffer.from('kernel v2'), etag: '"v2"' });
    expect(await place('/ipa.kernel')).toBe('downloaded');
    expect(await readFile(dest(), 'utf8')).toBe('kernel v2');
  });

  it('without an ETag, downloads again only when the size changes', async () => {
    server.images.set('/ipa.kernel', { body: Buffer.from('kernel v1') });
    expect(await place('/ipa.kernel')).toBe('downloaded');
    expect(await place('/ipa.kernel')).toBe('unchanged');
    server.images.set('/ipa.kernel', { body: Buffer.from('kernel v10') });
    expect(await place('/ipa.kernel')).toBe('downloaded');
    expect(await readFile(dest(), 'utf8')).toBe('kernel v10');
  });

  it('downloads again when the URL changes or the local file was altered', async () => {
    server.images.set('/a', { body: Buffer.from('kernel a'), etag: '"same"' });
    server.images.set('/b', { body: Buffer.from('kernel b'), etag: '"same"' });
    expect(await place('/a')).toBe('downloaded');
    expect(await place('/b')).toBe('downloaded');
    expect(await readFile(dest(), 'utf8')).toBe('kernel b');
    await writeFile(dest(), 'truncated');
    expect(await place('/b')).toBe('downloaded');
    expect(await readFile(dest(), 'utf8')).toBe('kernel b');
  });

  it('keeps nothing from a failed or cut-off download', async () => {
    await expect(place('/missing')).rejects.toThrow(/HTTP 404/);
    server.images.set('/cut', { body: Buffer.from('half'), announcedLength: 1000 });
    await expect(place('/cut')).rejects.toThrow(/cannot download driver_info.deploy_kernel/);
    expect(await readdir(join(dir, 'node'))).toEqual([]);
  });

  it('keeps no temporary file from cut-off downloads on a busy machine', async () => {
    // The thread pool busy (as on a loaded conductor) delays opening the temporary file until
    // after the cut-off body failed: the cleanup must still find it.
    server.images.set('/cut', { body: Buffer.from('half'), announcedLength: 1000 });
    for (let i = 0; i < 60; i++) {
      const busy = Array.from(
        { length: 4 },
        () => new Promise<void>((done) => pbkdf2('x', 'y', 40_000, 32, 'sha256', () => done())),
      );
      await expect(place('/cut')).rejects.toThrow(/cannot download/);
      await Promise.all(busy);
    }
    // Whatever was still being opened has finished by now.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(join(dir, 'node'))).toEqual([]);
  });

  it('replaces a hard link instead of writing through it', async () => {
    const original = join(dir, 'operator-kernel');
    await writeFile(original, 'operator kernel');
    await placeBootImage({ kind: 'local', path: original }, dest(), options);
    server.images.set('/ipa.kernel', { body: Buffer.from('downloaded kernel') });
    await place('/ipa.kernel');
    expect(await readFile(original, 'utf8')).toBe('operator kernel');
    expect(await readFile(dest(), 'utf8')).toBe('downloaded kernel');
  });

  it('removes the image with what it remembered', async () => {
    server.images.set('/ipa.kernel', { body: Buffer.from('kernel'), etag: '"v1"' });
    await place('/ipa.kernel');
    expect((await readdir(join(dir, 'node'))).sort()).toEqual(['.deploy_kernel.source.json', 'deploy_kernel']);
    expect(await readFile(join(dir, 'node', '.deploy_kernel.source.json'), 'utf8')).not.toContain('127.0.0.1');
    await removeBootImage(dest());
    await removeBootImage(dest());
    expect(await readdir(join(dir, 'node'))).toEqual([]);
  });

  it('sends credentials in the URL as basic auth, and never shows them in messages', async () => {
    const url = server.url.replace('http://', 'http://user:s%40cret@');
    server.images.set('/ipa.kernel', { body: Buffer.from('kernel') });
    expect(await placeBootImage({ kind: 'http', url: `${url}/ipa.kernel` }, dest(), options)).toBe('downloaded');
    expect(server.requests[0]?.authorization).toBe(`Basic ${Buffer.from('user:s@cret').toString('base64')}`);
    await expect(placeBootImage({ kind: 'http', url: `${url}/missing` }, dest(), options)).rejects.toThrow(
      /^(?!.*cret).*HTTP 404/,
    );
    expect(redactUrl('https://u:p@example.org/k')).toBe('https://***@example.org/k');
  });
});
