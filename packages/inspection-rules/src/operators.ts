import { InvalidParameterValue } from '@bmaas/common';
import { pythonStr } from './interpolation.js';

/**
 * A condition operator: its required and optional arguments (named as
 * Ironic's), the ones formatted before the check, and the check.
 */
export interface Operator {
  required: readonly string[];
  optional: readonly string[];
  formatted: readonly string[];
  check(args: Record<string, unknown>): boolean;
}

/** eq, lt, gt over a list of values, each pair in turn (Python's comparison; strings with force_strings). */
function comparison(compare: (a: never, b: never) => boolean, name: string): Operator {
  return {
    required: ['values'],
    optional: ['force_strings'],
    formatted: ['values'],
    check: ({ values, force_strings }) => {
      if (!Array.isArray(values)) {
        throw new InvalidParameterValue(
          `Failed to check condition: '${name}' on values: ${pythonStr(values)}: Expected list for 'values'`,
        );
      }
      const list = force_strings ? values.map(pythonStr) : values;
      return list.slice(1).every((value, i) => compare(list[i] as never, value as never));
    },
  };
}

const single = (check: (value: unknown, args: Record<string, unknown>) => boolean, optional: string[] = []) => ({
  required: ['value'],
  optional,
  formatted: ['value'],
  check: (args: Record<string, unknown>) => check(args.value, args),
});

function checkedRegex(source: unknown): RegExp {
  try {
    return new RegExp(String(source));
  } catch (error) {
    throw new InvalidParameterValue(`invalid regular expression: ${(error as Error).message}`);
  }
}

/** An IPv4 or IPv6 address as a bigint, with its width; undefined when it is not one. */
function parseAddress(text: string): { value: bigint; bits: number } | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    const octets = text.split('.').map(Number);
    if (octets.some((o) => o > 255)) return undefined;
    return { value: octets.reduce((acc, o) => (acc << 8n) | BigInt(o), 0n), bits: 32 };
  }
  if (!text.includes(':')) return undefined;
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return { value: all.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n), bits: 128 };
}

function inNetwork(address: unknown, subnet: unknown): boolean {
  const [network, prefixText] = String(subnet).split('/') as [string, string | undefined];
  const net = parseAddress(network);
  if (!net) throw new InvalidParameterValue(`invalid value: ${pythonStr(subnet)}`);
  const prefix = prefixText === undefined ? net.bits : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > net.bits) {
    throw new InvalidParameterValue(`invalid value: ${pythonStr(subnet)}`);
  }
  const ip = parseAddress(String(address));
  if (!ip || ip.bits !== net.bits) return false;
  const shift = BigInt(net.bits - prefix);
  return ip.value >> shift === net.value >> shift;
}

/** Python's == for JSON values (deep). */
function pyEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Condition operators by Ironic's names; `!name` inverts any of them. */
export const OPERATORS: Readonly<Record<string, Operator>> = {
  eq: comparison((a, b) => pyEqual(a, b), 'eq'),
  lt: comparison((a, b) => a < b, 'lt'),
  gt: comparison((a, b) => a > b, 'gt'),
  'is-empty': single((value) => ['', 'None', '[]', '{}'].includes(pythonStr(value))),
  'in-net': {
    required: ['address', 'subnet'],
    optional: [],
    formatted: ['address', 'subnet'],
    check: ({ address, subnet }) => inNetwork(address, subnet),
  },
  matches: {
    required: ['value', 'regex'],
    optional: [],
    formatted: ['value'],
    check: ({ value, regex }) => {
      const source = String(regex);
      return checkedRegex(`^(?:${source.endsWith('$') ? source : `${source}$`})`).test(pythonStr(value));
    },
  },
  contains: {
    required: ['value', 'regex'],
    optional: [],
    formatted: ['value'],
    check: ({ value, regex }) => checkedRegex(regex).test(pythonStr(value)),
  },
  'one-of': single((value, { values }) => Array.isArray(values) && values.some((v) => pyEqual(v, value)), ['values']),
  'is-none': single((value) => value === null || value === undefined),
  'is-true': single((value) => {
    if (typeof value === 'boolean') return value;
    if (typeof value === 'number') return value !== 0;
    return typeof value === 'string' && ['yes', 'true'].includes(value.toLowerCase());
  }),
  'is-false': single((value) => {
    if (typeof value === 'boolean') return !value;
    if (typeof value === 'number') return value === 0;
    if (typeof value === 'string') return ['no', 'false'].includes(value.toLowerCase());
    return value === null || value === undefined;
  }),
};

/** `!op` is `op` inverted. */
export function parseOperator(op: string): { name: string; inverted: boolean } {
  return op.startsWith('!') ? { name: op.slice(1), inverted: true } : { name: op, inverted: false };
}
