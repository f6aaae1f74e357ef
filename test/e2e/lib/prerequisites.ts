// Checks that the host tools the lab needs are installed (see test/debian-packages.txt),
// so a missing package fails with one clear message instead of a spawn error later.
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

const COMMANDS = ['qemu-system-x86_64', 'dnsmasq', 'ip', 'cpio', 'apt-get', 'apt-cache', 'dpkg-deb'];
const FILES = [
  '/bin/busybox', // busybox-static: copied into the test ramdisk
  '/usr/lib/ipxe/qemu/efi-virtio.rom', // ipxe-qemu: the virtio-net boot ROM QEMU loads
];

/** What the UEFI machines need besides: OVMF (ovmf) and grub-mkimage with its modules (grub-efi-amd64-bin). */
const UEFI_COMMANDS = ['grub-mkimage'];
const UEFI_FILES = [
  '/usr/share/OVMF/OVMF_CODE_4M.fd',
  '/usr/share/OVMF/OVMF_VARS_4M.fd',
  '/usr/lib/grub/x86_64-efi/http.mod',
];

/** The one list of Debian packages the tests need (npm test installs them when it runs as root). */
export const DEBIAN_PACKAGES_FILE = new URL('../../debian-packages.txt', import.meta.url);

/** Names the missing commands and files; empty when the lab can run. */
export async function missingLabTools(): Promise<string[]> {
  const missing: string[] = [];
  for (const command of COMMANDS) if (!(await onPath(command))) missing.push(command);
  for (const file of FILES) if (!(await exists(file, constants.R_OK))) missing.push(file);
  return missing;
}

/** Names what the UEFI (OVMF + GRUB) machines need on top of missingLabTools; empty when they can run. */
export async function missingUefiLabTools(): Promise<string[]> {
  const missing = await missingLabTools();
  for (const command of UEFI_COMMANDS) if (!(await onPath(command))) missing.push(command);
  for (const file of UEFI_FILES) if (!(await exists(file, constants.R_OK))) missing.push(file);
  return missing;
}

/** What virtual media machines need on top of the UEFI ones: the conductor's ISO tools (xorriso, isolinux, mtools, dosfstools). */
const VMEDIA_COMMANDS = ['xorriso', 'mkfs.vfat', 'mmd', 'mcopy'];
const VMEDIA_FILES = ['/usr/lib/ISOLINUX/isolinux.bin', '/usr/lib/syslinux/modules/bios/ldlinux.c32'];

/** Names what machines booted from virtual media need on top of missingUefiLabTools; empty when they can run. */
export async function missingVirtualMediaLabTools(): Promise<string[]> {
  const missing = await missingUefiLabTools();
  for (const command of VMEDIA_COMMANDS) if (!(await onPath(command))) missing.push(command);
  for (const file of VMEDIA_FILES) if (!(await exists(file, constants.R_OK))) missing.push(file);
  return missing;
}

/** Throws with install instructions when something is missing. */
export async function assertLabTools(): Promise<void> {
  const missing = await missingLabTools();
  if (missing.length > 0) {
    throw new Error(
      `e2e lab tools missing: ${missing.join(', ')}; install the packages listed in ${DEBIAN_PACKAGES_FILE.pathname}`,
    );
  }
}

async function onPath(command: string): Promise<boolean> {
  // the PATH spawn() will search, nothing more
  const dirs = (process.env.PATH ?? '').split(delimiter);
  for (const dir of dirs) if (dir && (await exists(join(dir, command), constants.X_OK))) return true;
  return false;
}

async function exists(path: string, mode: number): Promise<boolean> {
  try {
    await access(path, mode);
    return true;
  } catch {
    return false;
  }
}
