import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger } from '@bmaas/common';
import { InvalidImage } from '@bmaas/image-format';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InstanceImageCache } from './instance-image-cache.js';
import type { InstanceImageCacheSettings } from './settings.js';

const MIB = 1024 * 1024;
let dir: string;
let server: Server;
let base: string;
/** GETs per path, and the most answered at once. */
const gets = new Map<string, number>();
let inFlight = 0;
let mostInFlight = 0;
/** Every answer waits for this before it is sent (tests hold downloads open with it). */
let gate: Promise<void> = Promise.resolve();

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}
function qemuImg(...args: string[]): void {
  execFileSync('qemu-img', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
/** A raw disk of `mib` MiB with a partition table and `marker` in it, served at /<name>. */
function rawImage(name: string, mib: number, marker: string): string {
  const file = join(dir, 'www', name);
  qemuImg('create', '-f', 'raw', file, `${mib}M`);
  execFileSync('sfdisk', ['-q', file], { input: 'start=2048, type=83, bootable\n' });
  const image = readFileSync(file);
  image.write(marker, 2048 * 512);
  writeFileSync(file, image);
  return file;
}

function settings(overrides: Partial<InstanceImageCacheSettings> = {}): InstanceImageCacheSettings {
  return {
    path: join(dir, `cache-${Math.random().toString(16).slice(2)}`),
    maxBytes: 64 * MIB,
    concurrency: 4,
    forceRaw: true,
    permittedFormats: ['raw', 'gpt', 'qcow2', 'iso'],
    downloadTimeoutMs: 30_000,
    ...overrides,
  };
}
const request = (name: string, declaredFormat = 'raw', hash = sha256(join(dir, 'www', name))) => ({
  url: `${base}/${name}`,
  declaredFormat,
  hash: { algo: 'sha256', value: hash },
});
/** The cache directory's files: complete entries and their records only, never a partial file. */
const filesOf = (cache: InstanceImageCache) => readdirSync(cache.settings.path).sort();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'image-cache-'));
  execFileSync('mkdir', [join(dir, 'www')]);
  rawImage('disk.img', 4, 'disk-one');
  rawImage('other.img', 4, 'disk-two');
  rawImage('third.img', 4, 'disk-three');
  qemuImg('convert', '-f', 'raw', '-O', 'qcow2', join(dir, 'www/disk.img'), join(dir, 'www/disk.qcow2'));
  qemuImg('create', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', join(dir, 'www/hostile.qcow2'), '4M');
  server = createServer(async (req, res) => {
    const path = String(req.url);
    gets.set(path, (gets.get(path) ?? 0) + 1);
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    await gate;
    const file = join(dir, 'www', path.slice(1));
    if (!existsSync(file)) res.writeHead(404).end();
    else res.writeHead(200, { 'content-length': statSync(file).size }).end(readFileSync(file));
    inFlight--;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  gets.clear();
  mostInFlight = 0;
  gate = Promise.resolve();
});

describe('InstanceImageCache', () => {
  it('downloads an image once for any number of concurrent requests, and serves it from the cache after', async () => {
    const cache = new InstanceImageCache(settings(), createSilentLogger());
    let open!: () => void;
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const asked = Array.from({ length: 8 }, () => cache.get(request('disk.img')));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // while the download runs, nothing but a dot-named partial file is in the cache
    expect(filesOf(cache).every((name) => name.startsWith('.'))).toBe(true);
    open();
    const images = await Promise.all(asked);
    expect(new Set(images.map((image) => image.path)).size).toBe(1);
    expect(await cache.get(request('disk.img'))).toEqual(images[0]);
    expect(gets.get('/disk.img')).toBe(1);
    expect(cache.downloads).toBe(1);
    expect(images[0]).toMatchObject({
      format: 'mbr',
      size: 4 * MIB,
      virtualSize: 4 * MIB,
      sha256: request('disk.img').hash.value,
    });
    expect(readFileSync(images[0]?.path as string).equals(readFileSync(join(dir, 'www/disk.img')))).toBe(true);
  });

  it('converts a qcow2 to raw with force_raw_images (the raw disk it was made from), keeps it as is without', async () => {
    const raw = new InstanceImageCache(settings(), createSilentLogger());
    const converted = await raw.get(request('disk.qcow2', 'qcow2'));
    expect(converted).toMatchObject({ format: 'mbr', virtualSize: 4 * MIB, sha256: sha256(join(dir, 'www/disk.img')) });
    expect(converted.key).toMatch(/-raw$/);
    const kept = await new InstanceImageCache(settings({ forceRaw: false }), createSilentLogger()).get(
      request('disk.qcow2', 'qcow2'),
    );
    expect(kept).toMatchObject({ format: 'qcow2', virtualSize: 4 * MIB, sha256: sha256(join(dir, 'www/disk.qcow2')) });
  });

  it.each([
    ['a wrong checksum', 'disk.img', 'raw', 'f'.repeat(64), /Image failed to verify against checksum/],
    [
      'a qcow2 with a backing file',
      'hostile.qcow2',
      'qcow2',
      undefined,
      /unsafe \(qcow2\): qcow2 image has a backing file/,
    ],
    ['a qcow2 declared raw', 'disk.qcow2', 'raw', undefined, /is qcow2 but image_disk_format says raw/],
  ])('refuses %s and keeps nothing of it', async (_what, name, declared, hash, message) => {
    const cache = new InstanceImageCache(settings(), createSilentLogger());
    const refusal = cache.get(hash ? request(name, declared, hash) : request(name, declared));
    await expect(refusal).rejects.toBeInstanceOf(InvalidImage);
    await expect(refusal).rejects.toThrow(message);
    expect(filesOf(cache)).toEqual([]);
    expect(cache.usedBytes).toBe(0);
  });

  it('names a download that failed', async () => {
    const cache = new InstanceImageCache(settings(), createSilentLogger());
    await expect(cache.get(request('missing.img', 'raw', 'a'.repeat(64)))).rejects.toThrow(
      /Image download failed\. URL: http:\/\/127\.0\.0\.1:\d+\/missing\.img; Error: HTTP 404/,
    );
    expect(filesOf(cache)).toEqual([]);
  });

  it('evicts the least recently used image to stay under its size, and refuses an image larger than itself', async () => {
    const cache = new InstanceImageCache(settings({ maxBytes: 9 * MIB }), createSilentLogger());
    const one = await cache.get(request('disk.img'));
    const two = await cache.get(request('other.img'));
    await cache.get(request('disk.img')); // used again: other.img is now the oldest
    const three = await cache.get(request('third.img'));
    expect(filesOf(cache)).toEqual([one.key, `${one.key}.json`, three.key, `${three.key}.json`].sort());
    expect(cache.usedBytes).toBe(8 * MIB);
    expect(existsSync(two.path)).toBe(false);
    const small = new InstanceImageCache(settings({ maxBytes: 3 * MIB }), createSilentLogger());
    await expect(small.get(request('disk.img'))).rejects.toThrow(
      /takes 4 MiB, more than \[conductor\]instance_image_cache_size \(3 MiB\)/,
    );
  });

  it('runs at most image_download_concurrency downloads at once', async () => {
    const cache = new InstanceImageCache(settings({ concurrency: 2 }), createSilentLogger());
    let open!: () => void;
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const all = Promise.all(['disk.img', 'other.img', 'third.img'].map((name) => cache.get(request(name))));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(inFlight).toBe(2);
    open();
    await all;
    expect(mostInFlight).toBe(2);
    expect(cache.downloads).toBe(3);
  });

  it('keeps its complete entries over a restart and removes what a previous run left half done, and only that', async () => {
    const options = settings();
    const first = await new InstanceImageCache(options, createSilentLogger()).get(request('disk.img'));
    writeFileSync(join(options.path, `.${first.key}.abc123.part`), 'half');
    writeFileSync(join(options.path, 'sha256-0123'), 'an entry whose record never came');
    writeFileSync(join(options.path, 'not-ours.txt'), 'x');
    const again = new InstanceImageCache(options, createSilentLogger());
    expect(await again.get(request('disk.img'))).toEqual(first);
    expect(again.downloads).toBe(0);
    // what the cache made and did not finish goes; nothing else
    expect(filesOf(again)).toEqual([first.key, `${first.key}.json`, 'not-ours.txt'].sort());
  });

  it('publishes an image as a hard link that outlives its eviction', async () => {
    const cache = new InstanceImageCache(settings({ maxBytes: 5 * MIB }), createSilentLogger());
    const image = await cache.get(request('disk.img'));
    const dest = join(dir, 'httproot', 'agent_images', 'node-1');
    await cache.publish(image, dest);
    expect(statSync(dest).ino).toBe(statSync(image.path).ino);
    await cache.get(request('other.img')); // evicts disk.img
    expect(existsSync(image.path)).toBe(false);
    expect(sha256(dest)).toBe(image.sha256);
  });
});
