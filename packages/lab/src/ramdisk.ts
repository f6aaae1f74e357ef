// Builds the e2e test ramdisk: a Debian cloud kernel plus a busybox initrd whose
// /init plays a minimal ironic-python-agent (lookup, command API, heartbeats).
// The same builder makes the instance image's initrd (instance-image.ts).
// Results are cached per kernel package version and spec hash.

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
import { dirname, join } from 'node:path';
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

/** virtio-blk: the disk the agent writes to (/dev/vda) and the disks inspection lists; loaded after the virtio bus. */
export const VIRTIO_BLOCK_MODULES = ['virtio_blk'] as const;

/**
 * The CD drive (QEMU's ide-cd on the i440fx IDE controller) and ISO 9660, for the config drive
 * on a virtual media ISO: SCSI core, libata, ata_piix, the SCSI CD driver. The cloud kernel
 * has no AHCI driver, so a q35 machine's SATA CD stays unread (its ramdisk uses DHCP).
 */
export const CD_MODULES = ['scsi_common', 'scsi_mod', 'libata', 'ata_piix', 'cdrom', 'sr_mod', 'isofs'] as const;

/** Kernel arguments the ramdisk wants besides ipa-api-url= and BOOTIF=. */
export const RAMDISK_KERNEL_ARGS = 'console=ttyS0 quiet panic=1';
/** Where the test ramdisk's agent listens (ipa-listen-port). */
export const RAMDISK_AGENT_PORT = 9999;

const BUSYBOX = '/bin/busybox';
/** The agent converts qcow2 images to raw with it (qemu-utils); it and its libraries add ~10 MB to the ramdisk. */
export const QEMU_IMG = '/usr/bin/qemu-img';
// Bump when the build steps change in a way the hashed inputs do not show.
const BUILD_FORMAT = '4';

/** A busybox initramfs to build: its files (path in the root -> content, mode) and modules in load order. */
export interface InitramfsSpec {
  /** Names the cache entry, e.g. "ramdisk" or "instance". */
  label: string;
  files: Record<string, { content: string; mode: number }>;
  modules: readonly string[];
  /** Host programs copied to the same path in the root, with every shared library `ldd` names for them. */
  programs?: readonly string[];
  /** Writes more into the cache entry (e.g. a disk image) once kernel and initrd are there. */
  finish?: (entry: string) => Promise<void>;
  /** The file whose presence marks a complete entry (besides vmlinuz and initrd.img). */
  marker?: string;
}

/** Returns a cached kernel + initrd of the e2e ramdisk (ipa-protocol.md §5 agent). */
export async function buildTestRamdisk(cacheDir: string): Promise<TestRamdisk> {
  const read = (name: string) => readFile(new URL(`../assets/${name}`, import.meta.url), 'utf8');
  const entry = await buildInitramfs(cacheDir, {
    label: 'ramdisk',
    files: {
      init: { content: await read('ramdisk-init.sh'), mode: 0o755 },
      'etc/udhcpc.script': { content: await read('ramdisk-udhcpc.sh'), mode: 0o755 },
      'www/cgi-bin/index.cgi': { content: await read('agent-api.sh'), mode: 0o755 },
      'bin/agent-command': { content: await read('agent-command.sh'), mode: 0o755 },
      'bin/agent-heartbeat': { content: await read('agent-heartbeat.sh'), mode: 0o755 },
      'bin/ramdisk-inventory': { content: await read('ramdisk-inventory.sh'), mode: 0o755 },
      'bin/network-data': { content: await read('network-data.sh'), mode: 0o755 },
    },
    modules: [...VIRTIO_NET_MODULES, ...VIRTIO_BLOCK_MODULES, ...CD_MODULES],
    programs: [QEMU_IMG],
  });
  return filesOf(entry);
}

/**
 * Builds (once per kernel package version, busybox and spec) a directory
 * holding the Debian cloud kernel (vmlinuz) and a gzip'd busybox initramfs
 * (initrd.img) made from `spec`; returns its path.
 */
export async function buildInitramfs(cacheDir: string, spec: InitramfsSpec): Promise<string> {
  // busybox is part of the key too: a Debian update of busybox-static rebuilds
  const busybox = await readFile(BUSYBOX);
  const programs = await Promise.all(
    (spec.programs ?? []).map((program) =>
      readFile(program).catch((error: Error) => {
        throw new Error(`the ${spec.label} needs ${program} (qemu-utils): ${error.message}`);
      }),
    ),
  );
  const specHash = hashOf([
    BUILD_FORMAT,
    spec.label,
    ...Object.entries(spec.files).flatMap(([path, file]) => [path, file.content, String(file.mode)]),
    spec.modules.join(' '),
    spec.finish?.toString() ?? '',
    busybox,
    ...(spec.programs ?? []),
    ...programs,
  ]);
  await mkdir(cacheDir, { recursive: true });
  const complete = (entry: string) => isComplete(entry, spec.marker);

  const kernelPackage = await resolveKernelPackage().catch((error: Error) => error);
  if (kernelPackage instanceof Error) {
    // Without apt lists we cannot name the kernel; any build of this spec will do.
    const cached = await newestCachedBuild(cacheDir, specHash, complete);
    if (cached) return cached;
    throw new Error(`cannot resolve ${KERNEL_META_PACKAGE} (did apt-get update run?): ${kernelPackage.message}`);
  }

  const entry = join(cacheDir, safeName(`${kernelPackage.name}_${kernelPackage.version}_${specHash}`));
  if (await complete(entry)) return entry;

  // Build beside the cache entry, then rename: concurrent builders race harmlessly.
  const work = await mkdtemp(join(cacheDir, '.build-'));
  try {
    const out = join(work, 'out');
    await mkdir(out);
    await buildInto(work, out, kernelPackage, spec);
    await spec.finish?.(out);
    try {
      await rename(out, entry);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (!(code === 'ENOTEMPTY' || code === 'EEXIST') || !(await complete(entry))) throw error;
    }
    return entry;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

interface KernelPackage {
  name: string;
  version: string;
}

// One apt-cache call (they take ~1.5 s each here): the meta package pins the exact version.
async function resolveKernelPackage(): Promise<KernelPackage> {
  const show = await run('apt-cache', ['show', '--no-all-versions', KERNEL_META_PACKAGE]);
  const match = /^Depends:.*?(linux-image-\S+) \(= ([^)\s]+)\)/m.exec(show.stdout);
  if (!match?.[1] || !match[2]) throw new Error(`no pinned linux-image dependency in: ${show.stdout.trim()}`);
  return { name: match[1], version: match[2] };
}

async function buildInto(work: string, out: string, pkg: KernelPackage, spec: InitramfsSpec): Promise<void> {
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
  await assembleRoot(root, join(extracted, 'lib/modules', kernelVersion, 'kernel'), spec);
  await writeCpioGz(root, join(out, 'initrd.img'));
  await writeFile(
    join(out, 'build.json'),
    `${JSON.stringify({ package: pkg.name, version: pkg.version, kernelVersion, builtAt: new Date().toISOString() }, null, 2)}\n`,
  );
}

async function assembleRoot(root: string, moduleTree: string, spec: InitramfsSpec): Promise<void> {
  for (const dir of ['bin', 'dev', 'etc', 'proc', 'sys', 'tmp', 'mnt', 'lib/modules']) {
    await mkdir(join(root, dir), { recursive: true });
  }
  await copyFile(BUSYBOX, join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  await symlink('busybox', join(root, 'bin/sh')); // the kernel runs /init through its #!/bin/sh
  for (const [path, file] of Object.entries(spec.files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), file.content, { mode: file.mode });
  }

  for (const program of spec.programs ?? []) await copyWithLibraries(program, root);

  const found = await findModules(moduleTree);
  const loadOrder: string[] = [];
  for (const module of spec.modules) {
    const path = found.get(module);
    if (!path) continue; // built into this kernel
    if (!path.endsWith('.ko')) throw new Error(`compressed module not supported: ${path}`);
    await copyFile(path, join(root, 'lib/modules', `${module}.ko`));
    loadOrder.push(module);
  }
  await writeFile(join(root, 'lib/modules/load-order'), `${loadOrder.join('\n')}\n`);
}

/**
 * Copies a host program and the shared libraries it loads (as `ldd` lists
 * them, the loader included) to the same paths in the root: the loader then
 * finds them with no further set-up.
 */
async function copyWithLibraries(program: string, root: string): Promise<void> {
  const { stdout } = await run('ldd', [program]);
  const libraries = [...stdout.matchAll(/(?:=> )?(\/\S+) \(0x/g)].map((match) => match[1] as string);
  for (const file of [program, ...libraries]) {
    await mkdir(dirname(join(root, file)), { recursive: true });
    await copyFile(file, join(root, file));
    await chmod(join(root, file), 0o755);
  }
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

async function newestCachedBuild(
  cacheDir: string,
  specHash: string,
  complete: (entry: string) => Promise<boolean>,
): Promise<string | null> {
  let newest: { path: string; mtimeMs: number } | null = null;
  for (const name of await readdir(cacheDir)) {
    const path = join(cacheDir, name);
    if (!name.endsWith(`_${specHash}`) || !(await complete(path))) continue;
    const { mtimeMs } = await stat(path);
    if (!newest || mtimeMs > newest.mtimeMs) newest = { path, mtimeMs };
  }
  return newest?.path ?? null;
}

async function isComplete(entry: string, marker?: string): Promise<boolean> {
  try {
    const files = ['vmlinuz', 'initrd.img', ...(marker ? [marker] : [])];
    const sizes = await Promise.all(files.map((file) => stat(join(entry, file))));
    return sizes.every((file) => file.size > 0);
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
