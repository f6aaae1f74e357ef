import { InvalidParameterValue } from '../errors.js';
import { GIB, type InventoryDisk } from './inventory.js';

/** The root device hints a node may carry in properties.root_device (and instance_info.root_device). */
export const ROOT_DEVICE_HINTS = [
  'name',
  'size',
  'serial',
  'wwn',
  'wwn_with_extension',
  'wwn_vendor_extension',
  'model',
  'vendor',
  'rotational',
  'hctl',
  'by_path',
  'tran',
] as const;
export type RootDeviceHintName = (typeof ROOT_DEVICE_HINTS)[number];

/** Smallest disk taken when no hint is given, as the agent does (GiB). */
export const MIN_ROOT_DISK_GIB = 4;

const SIZE_OPERATORS = ['==', '!=', '>=', '<=', '>', '<'] as const;
type SizeOperator = (typeof SIZE_OPERATORS)[number];
const STRING_OPERATORS = ['s==', 's!=', '<in>'] as const;
type StringOperator = (typeof STRING_OPERATORS)[number] | 'equals';

interface SizeHint {
  operator: SizeOperator;
  gib: number;
}
interface StringHint {
  operator: StringOperator;
  value: string;
}

/** Hints parsed and normalised: what disk selection compares against. */
export interface ParsedRootDeviceHints {
  size?: SizeHint;
  rotational?: boolean;
  strings: Partial<Record<Exclude<RootDeviceHintName, 'size' | 'rotational'>, StringHint>>;
}

const TRUE_WORDS = new Set(['1', 't', 'true', 'on', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'f', 'false', 'off', 'n', 'no']);

function invalid(message: string): InvalidParameterValue {
  return new InvalidParameterValue(`Invalid root device hints: ${message}`);
}

function parseSize(value: unknown): SizeHint {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value <= 0) throw invalid(`size must be a positive integer (GiB), got ${value}.`);
    return { operator: '==', gib: value };
  }
  if (typeof value !== 'string') throw invalid('size must be a positive integer (GiB).');
  const match = /^\s*(==|!=|>=|<=|>|<)?\s*(\d+)\s*$/.exec(value);
  const gib = match ? Number(match[2]) : Number.NaN;
  if (!match || gib <= 0)
    throw invalid(`size must be a positive integer (GiB), optionally after ==, !=, >=, <=, > or <; got "${value}".`);
  return { operator: (match[1] as SizeOperator | undefined) ?? '==', gib };
}

function parseRotational(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const word = String(value).trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  throw invalid(`rotational must be a boolean, got ${JSON.stringify(value)}.`);
}

function parseString(key: string, value: unknown): StringHint {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(`${key} must be a non-empty string.`);
  const text = value.trim();
  for (const operator of STRING_OPERATORS) {
    if (text.startsWith(`${operator} `)) return { operator, value: normalise(key, text.slice(operator.length).trim()) };
  }
  return { operator: 'equals', value: normalise(key, text) };
}

function normalise(key: string, value: string): string {
  if (key === 'name' && !value.startsWith('/dev/')) return `/dev/${value}`;
  return key === 'name' || key === 'by_path' ? value : value.toLowerCase();
}

/**
 * Checks and parses root device hints (an object of hint → value). Throws
 * InvalidParameterValue naming the problem: not an object, an unknown hint,
 * a bad size, a non-boolean rotational, an empty string.
 */
export function parseRootDeviceHints(hints: unknown): ParsedRootDeviceHints {
  if (typeof hints !== 'object' || hints === null || Array.isArray(hints)) {
    throw invalid('root_device must be an object of hints.');
  }
  const unknown = Object.keys(hints).filter((key) => !(ROOT_DEVICE_HINTS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    throw invalid(`unknown hints ${unknown.join(', ')}; valid hints are ${ROOT_DEVICE_HINTS.join(', ')}.`);
  }
  const parsed: ParsedRootDeviceHints = { strings: {} };
  for (const [key, value] of Object.entries(hints)) {
    if (key === 'size') parsed.size = parseSize(value);
    else if (key === 'rotational') parsed.rotational = parseRotational(value);
    else parsed.strings[key as keyof ParsedRootDeviceHints['strings']] = parseString(key, value);
  }
  return parsed;
}

function sizeMatches(hint: SizeHint, bytes: number): boolean {
  const gib = Math.floor(bytes / GIB);
  switch (hint.operator) {
    case '==':
      return gib === hint.gib;
    case '!=':
      return gib !== hint.gib;
    case '>=':
      return gib >= hint.gib;
    case '<=':
      return gib <= hint.gib;
    case '>':
      return gib > hint.gib;
    case '<':
      return gib < hint.gib;
  }
}

function stringMatches(key: string, hint: StringHint, actual: unknown): boolean {
  if (typeof actual !== 'string' || actual === '') return false;
  const value = normalise(key, actual);
  switch (hint.operator) {
    case 'equals':
    case 's==':
      return value === hint.value;
    case 's!=':
      return value !== hint.value;
    case '<in>':
      return value.includes(hint.value);
  }
}

/** Whether one disk satisfies every parsed hint. */
export function diskMatches(disk: InventoryDisk, hints: ParsedRootDeviceHints): boolean {
  if (hints.size && !sizeMatches(hints.size, disk.size)) return false;
  if (hints.rotational !== undefined && Boolean(disk.rotational) !== hints.rotational) return false;
  return Object.entries(hints.strings).every(([key, hint]) => stringMatches(key, hint as StringHint, disk[key]));
}

/**
 * The disk the image goes to, as the agent chooses it: the first disk (in
 * inventory order) matching every hint; without hints, the smallest disk of
 * at least 4 GiB (ties broken by name). Undefined when none qualifies.
 * Throws InvalidParameterValue for malformed hints.
 */
export function selectRootDevice(disks: readonly InventoryDisk[], hints?: unknown): InventoryDisk | undefined {
  const hasHints =
    hints !== undefined && hints !== null && !(typeof hints === 'object' && Object.keys(hints).length === 0);
  if (hasHints) {
    const parsed = parseRootDeviceHints(hints);
    return disks.find((disk) => diskMatches(disk, parsed));
  }
  return [...disks]
    .filter((disk) => disk.size >= MIN_ROOT_DISK_GIB * GIB)
    .sort((a, b) => a.size - b.size || a.name.localeCompare(b.name))[0];
}

/** The hints that apply to a node: instance_info.root_device wins over properties.root_device. */
export function rootDeviceHintsOf(node: {
  properties: Record<string, unknown>;
  instanceInfo: Record<string, unknown>;
}): unknown {
  return node.instanceInfo.root_device ?? node.properties.root_device;
}

/**
 * Hints that make the agent pick exactly `disk`, for a deploy that chose it
 * from the stored inventory (e.g. as instance_info.root_device, which the
 * agent reads at lookup and prefers over properties.root_device): the most
 * stable identifier the disk has, wwn, then serial, then by_path, then name.
 */
export function hintsPinning(disk: InventoryDisk): Record<string, string> {
  for (const key of ['wwn', 'serial', 'by_path'] as const) {
    const value = disk[key];
    if (typeof value === 'string' && value !== '') return { [key]: value };
  }
  return { name: disk.name };
}
