// The GRUB EFI image UEFI lab machines load by HTTP Boot: built here with grub-mkimage (Debian
// grub-efi-amd64-bin), since Debian's signed grubnetx64.efi has no http module. Prefix /grub:
// GRUB then reads grub/grub.cfg (the grub boot interface's root config) from the server it
// came from.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** Its name in the first conductor's http_root, where DHCP points UEFI machines. */
export const GRUB_EFI_FILE = 'grubx64.efi';
export const GRUB_MODULES_DIR = '/usr/lib/grub/x86_64-efi';
const MODULES = [
  'efinet',
  'http',
  'tftp',
  'net',
  'linux',
  'normal',
  'configfile',
  'echo',
  'test',
  'sleep',
  'reboot',
  'efi_gop',
  'all_video',
];

export async function buildGrubHttpImage(path: string): Promise<void> {
  await promisify(execFile)('grub-mkimage', ['-O', 'x86_64-efi', '-o', path, '-p', '/grub', ...MODULES]);
}
