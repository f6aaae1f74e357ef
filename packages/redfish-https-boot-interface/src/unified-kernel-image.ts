// A Unified Kernel Image: systemd's EFI stub (Debian systemd-boot-efi) with the kernel, the
// initrd and the kernel command line added as PE sections (.linux, .initrd, .cmdline). UEFI
// firmware that loads it over HTTP runs the stub, which boots the kernel with that initrd and
// command line: one file, no boot loader and no DHCP boot options needed.
import { execFile } from 'node:child_process';
import { type FileHandle, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
 * each at the next multiple of its section alignment, as ukify places them. The same parts
 * give the same bytes: objcopy stamps a PE image with the time it wrote it, so the stub's own
 * stamp is put back (and the checksum made again), and a rebuild of an unchanged node's UKI
 * is seen to be unchanged.
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
    await restampPeImage(target, layout.timeDateStamp);
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
  timeDateStamp: number;
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
      timeDateStamp: buffer.readUInt32LE(pe + 8),
      imageBase: Number(buffer.readBigUInt64LE(optional + 24)),
      sectionAlignment: buffer.readUInt32LE(optional + 32),
      sizeOfImage: buffer.readUInt32LE(optional + 56),
    };
  } finally {
    await file.close();
  }
}

/** Where a PE image keeps its TimeDateStamp (COFF header) and CheckSum (PE32+ optional header). */
async function peStampOffsets(file: FileHandle): Promise<{ timeDateStamp: number; checkSum: number }> {
  const { buffer } = await file.read({ buffer: Buffer.alloc(4), position: 0x3c });
  const pe = buffer.readUInt32LE(0);
  return { timeDateStamp: pe + 8, checkSum: pe + 24 + 64 };
}

/** Sets a PE image's TimeDateStamp to `stamp` and its CheckSum to what the image now sums to. */
export async function restampPeImage(path: string, stamp: number): Promise<void> {
  const file = await open(path, 'r+');
  try {
    const offsets = await peStampOffsets(file);
    const word = Buffer.alloc(4);
    word.writeUInt32LE(stamp);
    await file.write(word, 0, 4, offsets.timeDateStamp);
    word.writeUInt32LE(await peChecksum(file, offsets.checkSum));
    await file.write(word, 0, 4, offsets.checkSum);
  } finally {
    await file.close();
  }
}

/** A PE image's CheckSum as the PE format defines it (read in chunks: a UKI carries a whole initrd). */
export async function peChecksumOf(path: string): Promise<{ stored: number; computed: number }> {
  const file = await open(path, 'r');
  try {
    const { checkSum } = await peStampOffsets(file);
    const { buffer } = await file.read({ buffer: Buffer.alloc(4), position: checkSum });
    return { stored: buffer.readUInt32LE(0), computed: await peChecksum(file, checkSum) };
  } finally {
    await file.close();
  }
}

/**
 * The end-around-carry sum of the file's 16-bit little-endian words with the CheckSum field
 * taken as zero, folded to 16 bits, plus the file's length.
 */
async function peChecksum(file: FileHandle, checkSumOffset: number): Promise<number> {
  const chunk = Buffer.alloc(1 << 20);
  let sum = 0; // words added whole and folded once at the end: the same sum, as end-around carry is associative
  let length = 0;
  for (;;) {
    const { bytesRead } = await file.read({ buffer: chunk, position: length });
    if (bytesRead === 0) break;
    // An odd read ends the file (a lone last byte is padded with zero) or is read again with its pair.
    const taken = bytesRead === 1 ? 1 : bytesRead & ~1;
    if (taken === 1) chunk[1] = 0;
    for (let i = 0; i < taken; i += 2) sum += chunk.readUInt16LE(i);
    for (const field of [checkSumOffset, checkSumOffset + 2]) {
      if (field >= length && field < length + taken) sum -= chunk.readUInt16LE(field - length);
    }
    length += taken;
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return (sum + length) >>> 0;
}

const align = (value: number, alignment: number) => Math.ceil(value / alignment) * alignment;
