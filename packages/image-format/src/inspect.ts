import { type FileHandle, open } from 'node:fs/promises';

/** The formats told apart from an image's bytes (the names upstream's format inspector gives, plus mbr). */
export const IMAGE_FORMATS = [
  'raw',
  'gpt',
  'mbr',
  'qcow2',
  'qed',
  'vhd',
  'vhdx',
  'vmdk',
  'vdi',
  'iso',
  'luks',
] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

/** Whole-disk images written as they are: no header, or a partition table in the first sector. */
export const RAW_FORMATS: ReadonlySet<ImageFormat> = new Set(['raw', 'gpt', 'mbr']);

/** What the bytes of an image say about it. */
export interface ImageInspection {
  format: ImageFormat;
  /** Bytes of the disk the image stands for, where the format says it; the file's size for raw images. */
  virtualSize: number | null;
  /** Features that make the image unsafe to hand to qemu-img or to a disk (empty: none found). */
  violations: string[];
}

/** Reads regions of the file at given offsets; a short read past the end gives fewer bytes. */
class ImageReader {
  constructor(
    private readonly file: FileHandle,
    readonly size: number,
  ) {}

  async read(offset: number, length: number): Promise<Buffer> {
    if (offset >= this.size) return Buffer.alloc(0);
    const buffer = Buffer.alloc(Math.min(length, this.size - offset));
    const { bytesRead } = await this.file.read(buffer, 0, buffer.length, offset);
    return buffer.subarray(0, bytesRead);
  }
}

type Detector = (reader: ImageReader, head: Buffer) => Promise<ImageInspection | null>;

const QCOW2_MAGIC = Buffer.from('QFI\xfb', 'latin1');
/** qcow2 incompatible feature bits: dirty, corrupt, external data file, compression type, extended L2 entries. */
const QCOW2_KNOWN_FEATURES = 0b11111n;
const QCOW2_EXTERNAL_DATA_FILE = 0b100n;

async function qcow2(_reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.length < 104 || !head.subarray(0, 4).equals(QCOW2_MAGIC)) return null;
  const violations: string[] = [];
  const version = head.readUInt32BE(4);
  if (head.readBigUInt64BE(8) !== 0n) violations.push('qcow2 image has a backing file');
  if (version === 3) {
    const features = head.readBigUInt64BE(72);
    if (features & QCOW2_EXTERNAL_DATA_FILE) violations.push('qcow2 image has an external data file');
    if (features & ~QCOW2_KNOWN_FEATURES) violations.push('qcow2 image uses unknown incompatible features');
  } else if (version !== 2) {
    violations.push(`qcow2 version ${version} is not supported`);
  }
  return { format: 'qcow2', virtualSize: Number(head.readBigUInt64BE(24)), violations };
}

async function qed(_reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (!head.subarray(0, 4).equals(Buffer.from('QED\0', 'latin1'))) return null;
  // Nothing deploys QED and it can name a backing file: refused whatever it holds, as upstream does.
  return {
    format: 'qed',
    virtualSize: head.length >= 48 ? Number(head.readBigUInt64LE(40)) : null,
    violations: ['QED images are not allowed'],
  };
}

async function vhd(_reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.toString('latin1', 0, 8) !== 'conectix' || head.length < 48) return null;
  return { format: 'vhd', virtualSize: Number(head.readBigUInt64BE(40)), violations: [] };
}

/** A Microsoft GUID as printed: the first three fields little-endian, the rest as stored. */
function guidAt(buffer: Buffer, offset: number): string {
  const hex = (start: number, end: number) => buffer.toString('hex', offset + start, offset + end).toUpperCase();
  const le = (start: number, bytes: number) =>
    Buffer.from(buffer.subarray(offset + start, offset + start + bytes))
      .reverse()
      .toString('hex')
      .toUpperCase();
  return `${le(0, 4)}-${le(4, 2)}-${le(6, 2)}-${hex(8, 10)}-${hex(10, 16)}`;
}

const VHDX_METADATA_REGION = '8B7CA206-4790-4B9A-B8FE-575F050F886E';
const VHDX_VIRTUAL_DISK_SIZE = '2FA54224-CD1B-4876-B211-5DBED83BF4B8';
const VHDX_MAX_ENTRIES = 2047;

async function vhdx(reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.toString('latin1', 0, 8) !== 'vhdxfile') return null;
  return { format: 'vhdx', virtualSize: await vhdxVirtualSize(reader), violations: [] };
}

/** Region table at 192 KiB -> metadata region -> its "virtual disk size" item; null where any link is missing. */
async function vhdxVirtualSize(reader: ImageReader): Promise<number | null> {
  const regions = await reader.read(192 * 1024, 64 * 1024);
  if (regions.length < 16 || regions.toString('latin1', 0, 4) !== 'regi') return null;
  const count = Math.min(regions.readUInt32LE(8), VHDX_MAX_ENTRIES);
  for (let i = 0; i < count && 16 + i * 32 + 32 <= regions.length; i++) {
    const entry = 16 + i * 32;
    if (guidAt(regions, entry) !== VHDX_METADATA_REGION) continue;
    const metaOffset = Number(regions.readBigUInt64LE(entry + 16));
    const table = await reader.read(metaOffset, 32 + VHDX_MAX_ENTRIES * 32);
    if (table.length < 32 || table.toString('latin1', 0, 8) !== 'metadata') return null;
    const items = Math.min(table.readUInt16LE(10), VHDX_MAX_ENTRIES);
    for (let j = 0; j < items && 32 + j * 32 + 32 <= table.length; j++) {
      const item = 32 + j * 32;
      if (guidAt(table, item) !== VHDX_VIRTUAL_DISK_SIZE) continue;
      const value = await reader.read(metaOffset + table.readUInt32LE(item + 16), 8);
      return value.length === 8 ? Number(value.readBigUInt64LE(0)) : null;
    }
    return null;
  }
  return null;
}

const VMDK_DESCRIPTOR_MAX = 1024 * 1024 - 1;
/** The only VMDK kinds that hold their data in the one file; every other one names extent files. */
const VMDK_SINGLE_FILE = new Set(['monolithicsparse', 'streamoptimized']);

async function vmdk(reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.toString('latin1', 0, 4) === 'KDMV') {
    if (head.length < 64) return null;
    const version = head.readUInt32LE(4);
    const descriptorOffset = Number(head.readBigUInt64LE(28)) * 512;
    const descriptorSize = Math.min(Number(head.readBigUInt64LE(36)) * 512, VMDK_DESCRIPTOR_MAX);
    const virtualSize = Number(head.readBigUInt64LE(12)) * 512;
    const violations: string[] = [];
    if (version < 1 || version > 3) violations.push(`VMDK version ${version} is not supported`);
    if (descriptorOffset !== 512) violations.push('VMDK descriptor is not where the format puts it');
    else violations.push(...vmdkDescriptorViolations(await reader.read(descriptorOffset, descriptorSize)));
    return { format: 'vmdk', virtualSize, violations };
  }
  // A descriptor-only VMDK is plain text naming other files as its extents.
  const text = head.toString('latin1');
  if (/^[\x20-\x7e\s]*$/.test(text) && /createType\s*=\s*"/i.test(text)) {
    return {
      format: 'vmdk',
      virtualSize: null,
      violations: vmdkDescriptorViolations(await reader.read(0, VMDK_DESCRIPTOR_MAX)),
    };
  }
  return null;
}

/** The rules upstream applies to a descriptor: a single-file kind, known lines only, extents without paths. */
function vmdkDescriptorViolations(raw: Buffer): string[] {
  const end = raw.indexOf(0);
  const text = raw.toString('latin1', 0, end === -1 ? raw.length : end).toLowerCase();
  const createType = /createtype\s*=\s*"([^"]{0,63})"/.exec(text)?.[1];
  if (!createType) return ['VMDK has no descriptor'];
  if (!VMDK_SINGLE_FILE.has(createType)) return [`VMDK subformat ${createType} keeps its data in other files`];
  const extents: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#') || line.startsWith('ddb')) continue;
    if (/^(rw|rdonly|noaccess)\s/.test(line)) extents.push(line);
    else if (!/^[^\s=]+\s*=/.test(line)) return ['VMDK descriptor has a line the format does not define'];
  }
  if (extents.length === 0) return ['VMDK descriptor names no extents'];
  if (extents.some((line) => line.includes('/'))) return ['VMDK extent names a path'];
  return [];
}

async function vdi(_reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.length < 0x178 || head.readUInt32LE(0x40) !== 0xbeda107f) return null;
  return { format: 'vdi', virtualSize: Number(head.readBigUInt64LE(0x170)), violations: [] };
}

async function iso(reader: ImageReader): Promise<ImageInspection | null> {
  const descriptor = await reader.read(32 * 1024, 2048);
  const signature = descriptor.toString('latin1', 1, 6);
  if (!['CD001', 'NSR02', 'NSR03'].includes(signature)) return null;
  // A primary volume descriptor (type 1) gives the volume's blocks and block size.
  const virtualSize =
    descriptor[0] === 1 && descriptor.length >= 132 ? descriptor.readUInt32LE(80) * descriptor.readUInt16LE(128) : null;
  return { format: 'iso', virtualSize, violations: [] };
}

/** A boot sector (0x55AA) that is not a FAT file system's: a partitioned disk, GPT when it holds a protective entry. */
async function partitionTable(reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (head.length < 512 || head.readUInt16LE(510) !== 0xaa55) return null;
  if (head[0x10] === 2 && head[0x15] === 0xf8) return null; // a FAT boot sector (superfloppy)
  const violations: string[] = [];
  const used: number[] = [];
  let gpt = false;
  for (let i = 0; i < 4; i++) {
    const entry = 446 + 16 * i;
    const bootFlag = head[entry] as number;
    const type = head[entry + 4] as number;
    if (bootFlag !== 0 && bootFlag !== 0x80) violations.push(`partition entry ${i} has an invalid boot flag`);
    if (type !== 0) used.push(i);
    if (type === 0xee) {
      gpt = true;
      if (head.readUInt32LE(entry + 8) !== 1) violations.push('GPT protective entry does not start at sector 1');
    }
  }
  if (gpt && (used.length !== 1 || used[0] !== 0)) violations.push('GPT protective MBR defines other partitions');
  if (used.length === 0) violations.push('partition table defines no partitions');
  return { format: gpt ? 'gpt' : 'mbr', virtualSize: reader.size, violations };
}

async function luks(_reader: ImageReader, head: Buffer): Promise<ImageInspection | null> {
  if (!head.subarray(0, 6).equals(Buffer.from('LUKS\xba\xbe', 'latin1'))) return null;
  const version = head.readUInt16BE(6);
  return {
    format: 'luks',
    virtualSize: null,
    violations: version === 1 ? [] : [`LUKS version ${version} is not supported`],
  };
}

const DETECTORS: readonly Detector[] = [qcow2, qed, vhd, vhdx, vmdk, vdi, iso, partitionTable, luks];

/**
 * Tells an image's real format from its bytes, never from its name or what
 * it was declared as, with the virtual size where the format records it and
 * every unsafe feature upstream's format inspector refuses (a qcow2 backing
 * or data file, VMDK extents in other files, QED, …). Bytes no format claims
 * are raw. Two claims at once are an error, except a hybrid ISO (an ISO with
 * a partition table in front), which is an ISO.
 */
export async function inspectImageFile(path: string): Promise<ImageInspection> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const reader = new ImageReader(file, size);
    const head = await reader.read(0, 512);
    const found: ImageInspection[] = [];
    for (const detect of DETECTORS) {
      const inspection = await detect(reader, head);
      if (inspection) found.push(inspection);
    }
    if (found.length === 0) return { format: 'raw', virtualSize: size, violations: [] };
    const isoFound = found.find((f) => f.format === 'iso');
    if (found.length === 2 && isoFound && found.some((f) => f.format === 'gpt' || f.format === 'mbr')) return isoFound;
    if (found.length > 1) {
      return {
        format: found[0]?.format as ImageFormat,
        virtualSize: null,
        violations: [`the image reads as several formats at once (${found.map((f) => f.format).join(', ')})`],
      };
    }
    return found[0] as ImageInspection;
  } finally {
    await file.close();
  }
}
