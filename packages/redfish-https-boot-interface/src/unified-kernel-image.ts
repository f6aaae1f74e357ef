// A Unified Kernel Image: systemd's EFI stub (Debian systemd-boot-efi) with the kernel, the
// initrd and the kernel command line added as PE sections (.linux, .initrd, .cmdline). UEFI
// firmware that loads it over HTTP runs the stub, which boots the kernel with that initrd and
// command line: one file, no boot loader and no DHCP boot options needed.
import { execFile } from 'node:child_process';
import { open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Debian's systemd-boot-efi: the stub a UKI is built on. */
export const UKI_STUB = '/usr/lib/systemd/boot/efi/linuxx64.efi.stub';

export interface UkiParts {
  /** The EFI stub (UKI_STUB). */
  stub: string;
  kernel: string;
  initrd: string;
  /** The kernel command line, one line. */
  cmdline: string;
}

/**
 * Writes the UKI of `parts` to `target` (a new file). The sections go after the stub's own,
 * each at the next multiple of its section alignment, as ukify places them.
 */
export async function buildUnifiedKernelImage(parts: UkiParts, target: string, scratch: string): Promise<void> {
  const layout = await stubLayout(parts.stub);
  await writeFile(scratch, `${parts.cmdline}\0`, { mode: 0o600 });
  try {
    const sections: Array<[string, string]> = [
      ['.cmdline', scratch],
      ['.linux', parts.kernel],
      ['.initrd', parts.initrd],
    ];
    const args: string[] = [];
    let address = align(layout.imageBase + layout.sizeOfImage, layout.sectionAlignment);
    for (const [name, file] of sections) {
      args.push('--add-section', `${name}=${file}`, '--change-section-vma', `${name}=0x${address.toString(16)}`);
      address = align(address + (await stat(file)).size, layout.sectionAlignment);
    }
    await execFileAsync('objcopy', [...args, parts.stub, target], { timeout: 120_000 });
  } finally {
    await rm(scratch, { force: true });
  }
}

/** The command line a UKI carries (its .cmdline section), read back with objcopy. */
export async function cmdlineOf(uki: string, scratch: string): Promise<string> {
  try {
    await execFileAsync('objcopy', ['-O', 'binary', '--only-section=.cmdline', uki, scratch], { timeout: 60_000 });
    return (await readFile(scratch, 'latin1')).replace(/\0+$/, '');
  } finally {
    await rm(scratch, { force: true });
  }
}

interface StubLayout {
  imageBase: number;
  sectionAlignment: number;
  sizeOfImage: number;
}

/** ImageBase, SectionAlignment and SizeOfImage of a PE32+ image (its optional header). */
async function stubLayout(stub: string): Promise<StubLayout> {
  const file = await open(stub, 'r');
  try {
    const { buffer } = await file.read({ buffer: Buffer.alloc(4096), position: 0 });
    const pe = buffer.readUInt32LE(0x3c);
    if (buffer.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new Error(`${stub} is not a PE image`);
    const optional = pe + 24;
    if (buffer.readUInt16LE(optional) !== 0x20b) throw new Error(`${stub} is not a PE32+ (64-bit) image`);
    return {
      imageBase: Number(buffer.readBigUInt64LE(optional + 24)),
      sectionAlignment: buffer.readUInt32LE(optional + 32),
      sizeOfImage: buffer.readUInt32LE(optional + 56),
    };
  } finally {
    await file.close();
  }
}

const align = (value: number, alignment: number) => Math.ceil(value / alignment) * alignment;
