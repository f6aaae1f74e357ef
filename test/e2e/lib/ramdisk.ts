// Builds the e2e test ramdisk: a Debian cloud kernel plus a busybox initrd whose
// /init plays a minimal ironic-python-agent (lookup, one heartbeat, power off).
// Results are cached per kernel package version and init script hash.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip, gunzipSync } from 'node:zlib';
import { run } from './child-process.js';

export interface TestRamdisk {
  kernel: string;
  initrd: string;
}

/** The meta package whose current dependency names the kernel we boot. */
export const KERNEL_META_PACKAGE = 'linux-image-cloud-amd64';

/** virtio-net is modular in the cloud kernel; insmod needs this dependency order. */
export const VIRTIO_NET_MODULES = [
  'virtio_ring',
  'virtio',
  'virtio_pci_legacy_dev',
  'virtio_pci_modern_dev',
  'virtio_pci',
  'failover',
  'net_failover',
  'virtio_net',
] as const;

/** virtio-blk, for the disks the inspection inventory lists (modular in the cloud kernel). */
export const VIRTIO_BLOCK_MODULES = ['virtio_blk'] as const;

/** Kernel arguments the ramdisk wants besides ipa-api-url= and BOOTIF=. */
export const RAMDISK_KERNEL_ARGS = 'console=ttyS0 quiet panic=1';

const BUSYBOX = '/bin/busybox';
// Bump when the build steps change in a way the hashed inputs do not show.
const BUILD_FORMAT = '2';

/** Returns a cached kernel + initrd, building them once per kernel version and init script. */
export async function buildTestRamdisk(cacheDir: string): Promise<TestRamdisk> {
  const scripts = await readScripts();
  // busybox is part of the key too: a Debian update of busybox-static rebuilds
  const busybox = await readFile(BUSYBOX);
  const modules = [...VIRTIO_NET_MODULES, ...VIRTIO_BLOCK_MODULES].join(' ');
  const scriptHash = hashOf([BUILD_FORMAT, scripts.init, scripts.udhcpc, scripts.inventory, modules, busybox]);
  await mkdir(cacheDir, { recursive: true });

  const kernelPackage = await resolveKernelPackage().catch((error: Error) => error);
  if (kernelPackage instanceof Error) {
    // Without apt lists we cannot name the kernel; any build with this script will do.
    const cached = await newestCachedBuild(cacheDir, scriptHash);
    if (cached) return cached;
    throw new Error(`cannot resolve ${KERNEL_META_PACKAGE} (did apt-get update run?): ${kernelPackage.message}`);
  }

  const entry = join(cacheDir, safeName(`${kernelPackage.name}_${kernelPackage.version}_${scriptHash}`));
  if (await isComplete(entry)) return filesOf(entry);

  // Build beside the cache entry, then rename: concurrent builders race harmlessly.
  const work = await mkdtemp(join(cacheDir, '.build-'));
  try {
    const out = join(work, 'out');
    await mkdir(out);
    await buildInto(work, out, kernelPackage, scripts);
    try {
      await rename(out, entry);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (!(code === 'ENOTEMPTY' || code === 'EEXIST') || !(await isComplete(entry))) throw error;
    }
    return filesOf(entry);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

interface KernelPackage {
  name: string;
  version: string;
}

interface Scripts {
  init: string;
  udhcpc: string;
  inventory: string;
}

async function readScripts(): Promise<Scripts> {
  return {
    init: await readFile(new URL('./ramdisk-init.sh', import.meta.url), 'utf8'),
    udhcpc: await readFile(new URL('./ramdisk-udhcpc.sh', import.meta.url), 'utf8'),
    inventory: await readFile(new URL('./ramdisk-inventory.sh', import.meta.url), 'utf8'),
  };
}

// One apt-cache call (they take ~1.5 s each here): the meta package pins the exact version.
async function resolveKernelPackage(): Promise<KernelPackage> {
  const show = await run('apt-cache', ['show', '--no-all-versions', KERNEL_META_PACKAGE]);
  const match = /^Depends:.*?(linux-image-\S+) \(= ([^)\s]+)\)/m.exec(show.stdout);
  if (!match?.[1] || !match[2]) throw new Error(`no pinned linux-image dependency in: ${show.stdout.trim()}`);
  return { name: match[1], version: match[2] };
}

async function buildInto(work: string, out: string, pkg: KernelPackage, scripts: Scripts): Promise<void> {
  await run('apt-get', ['download', `${pkg.name}=${pkg.version}`], { cwd: work, timeoutMs: 300_000 });
  const debs = (await readdir(work)).filter((file) => file.endsWith('.deb'));
  if (debs.length !== 1 || debs[0] === undefined)
    throw new Error(`expected one .deb in ${work}, got ${debs.join(', ')}`);
  const extracted = join(work, 'pkg');
  await run('dpkg-deb', ['-x', join(work, debs[0]), extracted]);

  const kernelVersions = await readdir(join(extracted, 'lib/modules'));
  const kernelVersion = kernelVersions[0];
  if (kernelVersions.length !== 1 || kernelVersion === undefined) throw new Error('expected one kernel in the package');
  await copyFile(join(extracted, 'boot', `vmlinuz-${kernelVersion}`), join(out, 'vmlinuz'));

  const root = join(work, 'root');
  await assembleRoot(root, join(extracted, 'lib/modules', kernelVersion, 'kernel'), scripts);
  await writeCpioGz(root, join(out, 'initrd.img'));
  await writeFile(
    join(out, 'build.json'),
    `${JSON.stringify({ package: pkg.name, version: pkg.version, kernelVersion, builtAt: new Date().toISOString() }, null, 2)}\n`,
  );
}

async function assembleRoot(root: string, moduleTree: string, scripts: Scripts): Promise<void> {
  for (const dir of ['bin', 'dev', 'etc', 'proc', 'sys', 'tmp', 'lib/modules']) {
    await mkdir(join(root, dir), { recursive: true });
  }
  await copyFile(BUSYBOX, join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  await symlink('busybox', join(root, 'bin/sh')); // the kernel runs /init through its #!/bin/sh
  await writeFile(join(root, 'init'), scripts.init, { mode: 0o755 });
  await writeFile(join(root, 'etc/udhcpc.script'), scripts.udhcpc, { mode: 0o755 });
  await writeFile(join(root, 'bin/ramdisk-inventory'), scripts.inventory, { mode: 0o755 });

  const found = await findModules(moduleTree);
  const loadOrder: string[] = [];
  for (const module of [...VIRTIO_NET_MODULES, ...VIRTIO_BLOCK_MODULES]) {
    const path = found.get(module);
    if (!path) continue; // built into this kernel
    if (!path.endsWith('.ko')) throw new Error(`compressed module not supported: ${path}`);
    await copyFile(path, join(root, 'lib/modules', `${module}.ko`));
    loadOrder.push(module);
  }
  await writeFile(join(root, 'lib/modules/load-order'), `${loadOrder.join('\n')}\n`);
}

/** Maps module name -> file for every module of the tree. */
async function findModules(tree: string): Promise<Map<string, string>> {
  const modules = new Map<string, string>();
  for (const entry of await readdir(tree, { recursive: true, withFileTypes: true })) {
    const match = /^(.+)\.ko(\.\w+)?$/.exec(entry.name);
    if (entry.isFile() && match?.[1]) modules.set(match[1], join(entry.parentPath, entry.name));
  }
  return modules;
}

/** Packs root as a gzip'd newc cpio, the format the kernel unpacks as initramfs. */
async function writeCpioGz(root: string, target: string): Promise<void> {
  const entries = await readdir(root, { recursive: true });
  const list = ['.', ...entries].join('\n');
  const cpio = spawn('cpio', ['-o', '-H', 'newc', '-R', '0:0', '--quiet'], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    cpio.once('error', reject);
    cpio.once('close', resolve);
  });
  cpio.stdin.end(`${list}\n`);
  await pipeline(cpio.stdout, createGzip({ level: 9 }), createWriteStream(target));
  const code = await exited;
  if (code !== 0) throw new Error(`cpio exited with ${code}`);
}

async function newestCachedBuild(cacheDir: string, scriptHash: string): Promise<TestRamdisk | null> {
  let newest: { path: string; mtimeMs: number } | null = null;
  for (const name of await readdir(cacheDir)) {
    const path = join(cacheDir, name);
    if (!name.endsWith(`_${scriptHash}`) || !(await isComplete(path))) continue;
    const { mtimeMs } = await stat(path);
    if (!newest || mtimeMs > newest.mtimeMs) newest = { path, mtimeMs };
  }
  return newest ? filesOf(newest.path) : null;
}

async function isComplete(entry: string): Promise<boolean> {
  try {
    const [kernel, initrd] = await Promise.all([stat(join(entry, 'vmlinuz')), stat(join(entry, 'initrd.img'))]);
    return kernel.size > 0 && initrd.size > 0;
  } catch {
    return false;
  }
}

function filesOf(entry: string): TestRamdisk {
  return { kernel: join(entry, 'vmlinuz'), initrd: join(entry, 'initrd.img') };
}

function hashOf(parts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex').slice(0, 12);
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** Lists the initrd's paths (for checks and debugging) by reading its newc headers. */
export async function listInitrd(initrd: string): Promise<string[]> {
  const archive = gunzipSync(await readFile(initrd));
  const names: string[] = [];
  const align4 = (n: number): number => (n + 3) & ~3;
  let offset = 0;
  while (offset + 110 <= archive.length) {
    const header = archive.toString('latin1', offset, offset + 110);
    if (!header.startsWith('070701')) throw new Error(`bad cpio header at ${offset}`);
    const field = (index: number): number => Number.parseInt(header.slice(6 + index * 8, 14 + index * 8), 16);
    const fileSize = field(6);
    const nameSize = field(11);
    const name = archive.toString('utf8', offset + 110, offset + 110 + nameSize - 1);
    if (name === 'TRAILER!!!') break;
    names.push(name);
    offset = align4(align4(offset + 110 + nameSize) + fileSize);
  }
  return names;
}
