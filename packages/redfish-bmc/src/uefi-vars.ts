// One-shot UEFI HTTP boot from a URI, written into a machine's OVMF variable store (the
// pflash file QEMU is started with): a load option whose device path is a short-form URI
// node (edk2's boot manager expands it onto each HTTP boot-capable NIC, and its HttpBootDxe
// loads that URI instead of the boot file DHCP names), and BootNext naming it. OVMF reads
// BootNext before anything else at its next start and deletes it, so later boots follow the
// machine's own order again. QEMU reads the file only when it starts: the file is written
// while no QEMU has it open.
//
// Layout (edk2 MdeModulePkg VariableFormat.h, the authenticated store OVMF uses): a firmware
// volume header, then the variable store header, then variables one after another, each a
// 60-byte header, its UCS-2 name and its data (on x86 with no padding between them: the
// name and data ALIGNMENT is 1), the next header at a multiple of 4; the free space is 0xFF.
import { readFile, writeFile } from 'node:fs/promises';

/** The Boot#### number of the HTTP boot option this writes (OVMF numbers its own from 0). */
export const HTTP_BOOT_OPTION = 0x0b00;

const FV_SIGNATURE = '_FVH';
const AUTHENTICATED_VARIABLE_GUID = guidBytes('aaf32c78-947b-439a-a180-2e144ec37792');
const EFI_GLOBAL_VARIABLE_GUID = guidBytes('8be4df61-93ca-11d2-aa0d-00e098032b8c');
const VARIABLE_START_ID = 0x55aa;
const VAR_ADDED = 0x3f;
const VAR_DELETED = 0xfd;
const VAR_IN_DELETED_TRANSITION = 0xfe;
const VARIABLE_HEADER_SIZE = 60;
const STORE_HEADER_SIZE = 28;
/** NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS */
const NV_BS_RT = 0x7;
const LOAD_OPTION_ACTIVE = 0x1;

interface Variable {
  offset: number;
  state: number;
  name: string;
  vendor: Buffer;
}

/**
 * Writes Boot0B00 (a URI boot of `uri`) and BootNext = 0x0B00 into the OVMF variable store
 * `file`, replacing earlier ones. Throws when the file is not such a store or is full.
 */
export async function setHttpBootNext(file: string, uri: string, description = 'UEFI HTTP boot (BMC)'): Promise<void> {
  const store = await readFile(file);
  const { start, end } = variableArea(store);
  const name = `Boot${HTTP_BOOT_OPTION.toString(16).toUpperCase().padStart(4, '0')}`;
  let free = start;
  for (const variable of variables(store, start, end)) {
    free = variable.next;
    const replaced = variable.name === name || variable.name === 'BootNext';
    const live = variable.state === VAR_ADDED || variable.state === (VAR_ADDED & VAR_IN_DELETED_TRANSITION);
    if (replaced && live && variable.vendor.equals(EFI_GLOBAL_VARIABLE_GUID)) {
      // a live variable (VAR_ADDED, perhaps in deleted transition): mark it deleted
      store[variable.offset + 2] = variable.state & VAR_DELETED;
    }
  }
  const bootNext = Buffer.alloc(2);
  bootNext.writeUInt16LE(HTTP_BOOT_OPTION);
  const added = Buffer.concat([
    variableRecord(name, loadOption(description, uriDevicePath(uri))),
    variableRecord('BootNext', bootNext),
  ]);
  if (free + added.length > end) throw new Error(`the UEFI variable store ${file} is full`);
  added.copy(store, free);
  await writeFile(file, store);
}

/** The live (not deleted) global variables of the store: name -> data, for tests and checks. */
export async function readGlobalVariables(file: string): Promise<Map<string, Buffer>> {
  const store = await readFile(file);
  const { start, end } = variableArea(store);
  const found = new Map<string, Buffer>();
  for (const variable of variables(store, start, end)) {
    if (variable.state === VAR_ADDED && variable.vendor.equals(EFI_GLOBAL_VARIABLE_GUID)) {
      found.set(variable.name, variable.data);
    }
  }
  return found;
}

/** The URI of a load option written by setHttpBootNext (its device path's URI node), or undefined. */
export function uriOfLoadOption(option: Buffer): string | undefined {
  const pathLength = option.readUInt16LE(4);
  let offset = 6;
  while (offset + 1 < option.length && option.readUInt16LE(offset) !== 0) offset += 2;
  const path = option.subarray(offset + 2, offset + 2 + pathLength);
  if (path[0] !== 0x03 || path[1] !== 24) return undefined;
  return path.subarray(4, path.readUInt16LE(2)).toString('latin1');
}

function variableArea(store: Buffer): { start: number; end: number } {
  if (store.length < 0x100 || store.toString('latin1', 0x28, 0x2c) !== FV_SIGNATURE) {
    throw new Error('not an OVMF variable store: no firmware volume header');
  }
  const headerLength = store.readUInt16LE(0x30);
  const storeHeader = store.subarray(headerLength, headerLength + STORE_HEADER_SIZE);
  if (!storeHeader.subarray(0, 16).equals(AUTHENTICATED_VARIABLE_GUID)) {
    throw new Error('not an authenticated UEFI variable store (the one OVMF keeps)');
  }
  const size = storeHeader.readUInt32LE(16);
  return { start: align4(headerLength + STORE_HEADER_SIZE), end: headerLength + size };
}

function* variables(store: Buffer, start: number, end: number): Generator<Variable & { data: Buffer; next: number }> {
  let offset = start;
  while (offset + VARIABLE_HEADER_SIZE <= end && store.readUInt16LE(offset) === VARIABLE_START_ID) {
    const nameSize = store.readUInt32LE(offset + 36);
    const dataSize = store.readUInt32LE(offset + 40);
    const nameAt = offset + VARIABLE_HEADER_SIZE;
    const dataAt = nameAt + nameSize;
    const next = align4(dataAt + dataSize);
    if (next > end) throw new Error('the UEFI variable store is corrupt: a variable runs past its end');
    yield {
      offset,
      state: store[offset + 2] as number,
      vendor: store.subarray(offset + 44, offset + 60),
      name: store.toString('utf16le', nameAt, nameAt + nameSize).replace(/\0+$/, ''),
      data: store.subarray(dataAt, dataAt + dataSize),
      next,
    };
    offset = next;
  }
}

function variableRecord(name: string, data: Buffer): Buffer {
  const nameBytes = Buffer.from(`${name}\0`, 'utf16le');
  const header = Buffer.alloc(VARIABLE_HEADER_SIZE);
  header.writeUInt16LE(VARIABLE_START_ID, 0);
  header[2] = VAR_ADDED;
  header.writeUInt32LE(NV_BS_RT, 4);
  // MonotonicCount, TimeStamp, PubKeyIndex: zero for a variable that is not time-authenticated
  header.writeUInt32LE(nameBytes.length, 36);
  header.writeUInt32LE(data.length, 40);
  EFI_GLOBAL_VARIABLE_GUID.copy(header, 44);
  const record = Buffer.concat([header, nameBytes, data]);
  return Buffer.concat([record, Buffer.alloc(align4(record.length) - record.length, 0xff)]);
}

/** EFI_LOAD_OPTION: attributes, the device path's length, the description (UCS-2), the device path. */
function loadOption(description: string, devicePath: Buffer): Buffer {
  const head = Buffer.alloc(6);
  head.writeUInt32LE(LOAD_OPTION_ACTIVE, 0);
  head.writeUInt16LE(devicePath.length, 4);
  return Buffer.concat([head, Buffer.from(`${description}\0`, 'utf16le'), devicePath]);
}

/** A short-form device path: one Messaging URI node (type 3, subtype 24), then the end node. */
function uriDevicePath(uri: string): Buffer {
  const text = Buffer.from(uri, 'latin1');
  const node = Buffer.alloc(4);
  node[0] = 0x03;
  node[1] = 24;
  node.writeUInt16LE(4 + text.length, 2);
  return Buffer.concat([node, text, Buffer.from([0x7f, 0xff, 0x04, 0x00])]);
}

/** A GUID's bytes as EFI stores them (the first three fields little-endian). */
function guidBytes(guid: string): Buffer {
  const hex = guid.replaceAll('-', '');
  const bytes = Buffer.from(hex, 'hex');
  bytes.subarray(0, 4).reverse();
  bytes.subarray(4, 6).reverse();
  bytes.subarray(6, 8).reverse();
  return bytes;
}

const align4 = (n: number) => (n + 3) & ~3;
