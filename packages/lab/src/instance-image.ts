// Builds the e2e instance image: a raw whole-disk image (MBR, one FAT partition
// booted by SYSLINUX under SeaBIOS, and by OVMF from its \EFI\BOOT\BOOTX64.EFI, a Unified
// Kernel Image of the same kernel, initrd and command line) holding the Debian cloud kernel
// and a busybox initrd (instance-init.sh). Made from Debian packages without mounting anything
// (sfdisk, mkfs.vfat, mtools, syslinux), as in deploy-and-uefi-lab.md recipe A1;
// cached with the ramdisk builds.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildUnifiedKernelImage, UKI_STUB } from '@bmaas/redfish-https-boot-interface';
import { run } from './child-process.js';
import { buildInitramfs, VIRTIO_BLOCK_MODULES, VIRTIO_NET_MODULES } from './ramdisk.js';

export interface InstanceImage {
  /** The raw disk image. */
  path: string;
  size: number;
  sha256: string;
}

const IMAGE_FILE = 'instance.img';
const MBR_CODE = '/usr/lib/syslinux/mbr/mbr.bin';
const MIB = 1024 * 1024;
const SYSLINUX_CFG = `SERIAL 0 115200
PROMPT 0
TIMEOUT 0
DEFAULT linux
LABEL linux
  KERNEL /vmlinuz
  INITRD /initrd.img
  APPEND console=ttyS0 quiet panic=5
`;

/** Returns the cached instance image, building it once per kernel package and init script. */
export async function buildInstanceImage(cacheDir: string): Promise<InstanceImage> {
  const read = (name: string) => readFile(new URL(`../assets/${name}`, import.meta.url), 'utf8');
  const entry = await buildInitramfs(cacheDir, {
    label: 'instance',
    files: {
      init: { content: await read('instance-init.sh'), mode: 0o755 },
      'etc/udhcpc.script': { content: await read('ramdisk-udhcpc.sh'), mode: 0o755 },
      'bin/network-data': { content: await read('network-data.sh'), mode: 0o755 },
    },
    // the config drive is an ISO 9660 filesystem (isofs needs cdrom)
    modules: [...VIRTIO_NET_MODULES, ...VIRTIO_BLOCK_MODULES, 'cdrom', 'isofs'],
    finish: writeDiskImage,
    marker: IMAGE_FILE,
  });
  const path = join(entry, IMAGE_FILE);
  return { path, size: (await stat(path)).size, sha256: await sha256Of(path) };
}

/**
 * MBR with SYSLINUX's boot code, partition 1 (FAT16, bootable) at 1 MiB with kernel, initrd,
 * syslinux.cfg, and for UEFI the removable-media path \EFI\BOOT\BOOTX64.EFI: a UKI of the
 * same kernel, initrd and command line (OVMF boots it from any FAT partition of the disk).
 */
async function writeDiskImage(entry: string): Promise<void> {
  const kernel = join(entry, 'vmlinuz');
  const initrd = join(entry, 'initrd.img');
  const config = join(entry, 'syslinux.cfg');
  await writeFile(config, SYSLINUX_CFG);
  const uki = join(entry, 'BOOTX64.EFI');
  const cmdline = /APPEND (.*)/.exec(SYSLINUX_CFG)?.[1] ?? '';
  await buildUnifiedKernelImage({ stub: UKI_STUB, kernel, initrd, cmdline }, uki, join(entry, 'uki.cmdline'));
  const fsMib = Math.ceil(((await stat(kernel)).size + (await stat(initrd)).size + (await stat(uki)).size) / MIB) + 4;
  const image = join(entry, IMAGE_FILE);
  const partition = join(entry, 'partition.img');
  await writeFile(image, '');
  await truncate(image, (fsMib + 2) * MIB);
  await run('sh', ['-c', `echo 'start=2048, size=${fsMib * 2048}, type=6, bootable' | sfdisk -q '${image}'`]);
  await writeFile(partition, '');
  await truncate(partition, fsMib * MIB);
  // -h: hidden sectors = where the partition starts, which the boot sector needs
  await run('mkfs.vfat', ['-n', 'INSTANCE', '-h', '2048', partition]);
  await run('mcopy', ['-i', partition, kernel, initrd, config, '::']);
  await run('mmd', ['-i', partition, '::/EFI', '::/EFI/BOOT']);
  await run('mcopy', ['-i', partition, uki, '::/EFI/BOOT/BOOTX64.EFI']);
  await run('syslinux', ['--install', partition]);
  await run('dd', [`if=${partition}`, `of=${image}`, 'bs=1M', 'seek=1', 'conv=notrunc', 'status=none']);
  await run('dd', [`if=${MBR_CODE}`, `of=${image}`, 'bs=440', 'count=1', 'conv=notrunc', 'status=none']);
  await rm(partition);
  await rm(uki);
}

function sha256Of(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}
