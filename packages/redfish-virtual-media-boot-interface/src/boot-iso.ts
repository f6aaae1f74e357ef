import { execFile } from 'node:child_process';
import { access, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The Debian files the ISO is made of: isolinux (BIOS El Torito boot and the
 * hybrid MBR), syslinux-common (ldlinux.c32) and grub-efi-amd64-bin (GRUB's
 * x86_64-efi modules); xorriso writes it, dosfstools and mtools the EFI
 * system partition image.
 */
export const ISO_TOOL_FILES = {
  isolinuxBin: '/usr/lib/ISOLINUX/isolinux.bin',
  isohybridMbr: '/usr/lib/ISOLINUX/isohdpfx.bin',
  ldlinux: '/usr/lib/syslinux/modules/bios/ldlinux.c32',
  grubModules: '/usr/lib/grub/x86_64-efi',
} as const;
const ISO_PROGRAMS = ['xorriso', 'grub-mkimage', 'mkfs.vfat', 'mmd', 'mcopy'] as const;

/** Paths of the ISO's own files. */
export const ISO_PATHS = {
  kernel: '/vmlinuz',
  initrd: '/initrd',
  isolinuxDir: 'isolinux',
  isolinuxConfig: 'isolinux/isolinux.cfg',
  /** GRUB's configuration on the ISO; the loader in the EFI image finds the ISO by this file. */
  grubConfig: 'boot/grub/bmaas-vmedia.cfg',
  /** The El Torito UEFI boot image: a FAT file system with EFI/BOOT/BOOTX64.EFI. */
  efiImage: 'boot/grub/efiboot.img',
} as const;

/** GRUB modules the EFI loader carries: it reads the ISO and boots a Linux kernel with nothing else to load. */
const GRUB_MODULES = [
  'iso9660',
  'fat',
  'part_gpt',
  'part_msdos',
  'search',
  'search_fs_file',
  'configfile',
  'normal',
  'linux',
  'echo',
  'test',
  'all_video',
  'efi_gop',
  'serial',
  'terminal',
];
/** Size of the EFI system partition image, KiB: the GRUB loader (~0.7 MB) with room to spare. */
const EFI_IMAGE_KIB = 2880;
const TOOL_TIMEOUT_MS = 120_000;

/** What one boot ISO holds. */
export interface BootIsoSpec {
  /** Local paths of the ramdisk's kernel and initrd. */
  kernel: string;
  initrd: string;
  /** The kernel command line, one line (checked by the caller). */
  commandLine: string;
  /** ISO 9660 volume id: `config-2` when the ISO carries config-drive files. */
  volumeId: string;
  /** What the menu entries say (e.g. "deploy ramdisk of node <uuid>"), one line. */
  title: string;
  /** More files on the ISO: path (relative, `/`-separated) -> content. */
  files: Readonly<Record<string, string>>;
}

/** Fails with what is missing when the Debian packages the ISO needs are not installed. */
export async function requireIsoTools(): Promise<void> {
  const missing: string[] = [];
  for (const file of Object.values(ISO_TOOL_FILES)) {
    if (
      !(await access(file).then(
        () => true,
        () => false,
      ))
    )
      missing.push(file);
  }
  for (const program of ISO_PROGRAMS) {
    const found = await run('sh', ['-c', 'command -v "$1"', 'sh', program]).then(
      () => true,
      () => false,
    );
    if (!found) missing.push(program);
  }
  if (missing.length > 0) {
    throw new Error(
      `cannot build a boot ISO: ${missing.join(', ')} missing (Debian packages xorriso, isolinux, syslinux-common, grub-efi-amd64-bin, mtools, dosfstools)`,
    );
  }
}

export function isolinuxConfig(spec: Pick<BootIsoSpec, 'commandLine' | 'title'>): string {
  return [
    'DEFAULT boot',
    'PROMPT 0',
    'TIMEOUT 0',
    'LABEL boot',
    `  MENU LABEL ${spec.title}`,
    `  KERNEL ${ISO_PATHS.kernel}`,
    `  APPEND initrd=${ISO_PATHS.initrd} ${spec.commandLine}`,
    '',
  ].join('\n');
}

export function grubConfig(spec: Pick<BootIsoSpec, 'commandLine' | 'title'>): string {
  return [
    'set default=0',
    'set timeout=0',
    `menuentry "${spec.title}" {`,
    `  echo "bmaas: ${spec.title}"`,
    `  linux ${ISO_PATHS.kernel} ${spec.commandLine}`,
    `  initrd ${ISO_PATHS.initrd}`,
    '}',
    '',
  ].join('\n');
}

/**
 * The configuration built into the EFI loader: find the ISO by its GRUB
 * configuration (the one CD holds it; no disk does) and read that.
 */
const EMBEDDED_GRUB_CONFIG = [
  `search --no-floppy --set=root --file /${ISO_PATHS.grubConfig}`,
  'set prefix=($root)/boot/grub',
  `configfile ($root)/${ISO_PATHS.grubConfig}`,
  '',
].join('\n');

/**
 * Writes a hybrid boot ISO to `output`: BIOS boots isolinux (El Torito, and
 * from a disk through the isohybrid MBR), UEFI boots the EFI system
 * partition image (El Torito and a GPT entry), whose GRUB loads the same
 * kernel, initrd and command line from the ISO. The kernel and initrd are
 * grafted from where they are, not copied first.
 */
export async function buildBootIso(spec: BootIsoSpec, output: string): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'bmaas-vmedia-'));
  try {
    const root = join(work, 'root');
    const put = async (path: string, content: string) => {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), content);
    };
    for (const [path, content] of Object.entries(spec.files)) await put(path, content);
    await put(ISO_PATHS.isolinuxConfig, isolinuxConfig(spec));
    await put(ISO_PATHS.grubConfig, grubConfig(spec));
    // isolinux.bin is patched with the boot info table: the ISO gets a copy.
    await copyFile(ISO_TOOL_FILES.isolinuxBin, join(root, ISO_PATHS.isolinuxDir, 'isolinux.bin'));
    await copyFile(ISO_TOOL_FILES.ldlinux, join(root, ISO_PATHS.isolinuxDir, 'ldlinux.c32'));
    await writeEfiImage(work, join(root, ISO_PATHS.efiImage));
    await tool('xorriso', [
      '-as',
      'mkisofs',
      '-quiet',
      '-o',
      output,
      '-V',
      spec.volumeId,
      '-r',
      '-J',
      '-isohybrid-mbr',
      ISO_TOOL_FILES.isohybridMbr,
      '-c',
      `${ISO_PATHS.isolinuxDir}/boot.cat`,
      '-b',
      `${ISO_PATHS.isolinuxDir}/isolinux.bin`,
      '-no-emul-boot',
      '-boot-load-size',
      '4',
      '-boot-info-table',
      '-eltorito-alt-boot',
      '-e',
      ISO_PATHS.efiImage,
      '-no-emul-boot',
      '-isohybrid-gpt-basdat',
      '-graft-points',
      `/=${root}`,
      `${ISO_PATHS.kernel}=${spec.kernel}`,
      `${ISO_PATHS.initrd}=${spec.initrd}`,
    ]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** GRUB for x86_64 UEFI with the embedded configuration, as EFI/BOOT/BOOTX64.EFI of a FAT image. */
async function writeEfiImage(work: string, image: string): Promise<void> {
  const embedded = join(work, 'embedded.cfg');
  const loader = join(work, 'BOOTX64.EFI');
  await writeFile(embedded, EMBEDDED_GRUB_CONFIG);
  await tool('grub-mkimage', [
    '-O',
    'x86_64-efi',
    '-d',
    ISO_TOOL_FILES.grubModules,
    '-o',
    loader,
    '-p',
    '/boot/grub',
    '-c',
    embedded,
    ...GRUB_MODULES,
  ]);
  await mkdir(dirname(image), { recursive: true });
  await tool('mkfs.vfat', ['-C', image, String(EFI_IMAGE_KIB)]);
  await tool('mmd', ['-i', image, '::/EFI', '::/EFI/BOOT']);
  await tool('mcopy', ['-i', image, loader, '::/EFI/BOOT/BOOTX64.EFI']);
}

async function tool(command: string, args: readonly string[]): Promise<void> {
  try {
    await run(command, args, { timeout: TOOL_TIMEOUT_MS, env: { ...process.env, MTOOLS_SKIP_CHECK: '1' } });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    const detail = (stderr ?? '').trim().split('\n').slice(-3).join(' ') || message.split('\n')[0];
    throw new Error(`cannot build a boot ISO: ${command} failed: ${detail}`);
  }
}
