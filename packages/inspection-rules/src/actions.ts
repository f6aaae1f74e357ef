import { BmaasError, InvalidParameterValue } from '@bmaas/common';
import { pythonStr } from './interpolation.js';

/** A `fail` action, or a rule that could not be applied: inspection fails with this message. */
export class HardwareInspectionFailure extends BmaasError {}

/** What rules read and change: the node (Ironic field names), its traits and ports, and plugin data. */
export interface RuleSubject {
  /** The node's writable fields by Ironic name (driver_info, properties, extra, …), changed in place. */
  node: Record<string, unknown>;
  traits: Set<string>;
  /** The node's ports by uuid, each with its writable fields by Ironic name. */
  ports: Map<string, Record<string, unknown>>;
  pluginData: Record<string, unknown>;
  log(level: 'debug' | 'info' | 'warning' | 'error' | 'critical', message: string): void;
}

/** An action: its required and optional arguments, the ones formatted, and what it does to the subject. */
export interface Action {
  required: readonly string[];
  optional: readonly string[];
  formatted: readonly string[];
  run(subject: RuleSubject, args: Record<string, unknown>): void;
}

/** `a/b/c` or `a.b.c` (Ironic's normalize_path). */
function pathParts(path: unknown): string[] {
  const text = String(path);
  return text.includes('/') ? text.replace(/^\/+|\/+$/g, '').split('/') : text.split('.');
}

/** The object holding the last part of `parts`, made on the way (setdefault), or undefined without `create`. */
function parentOf(
  root: Record<string, unknown>,
  parts: string[],
  create: boolean,
): Record<string, unknown> | undefined {
  let current = root;
  for (const part of parts.slice(0, -1)) {
    let next = current[part];
    if (next === undefined && create) {
      next = {};
      current[part] = next;
    }
    if (next === null || typeof next !== 'object' || Array.isArray(next)) return undefined;
    current = next as Record<string, unknown>;
  }
  return current;
}

function setPath(root: Record<string, unknown>, path: unknown, value: unknown, what: string): void {
  const parts = pathParts(path);
  if (parts.length === 1 && !Object.hasOwn(root, parts[0] as string)) {
    throw new InvalidParameterValue(`Failed to set attribute ${pythonStr(path)}: ${what} has no field ${parts[0]}`);
  }
  const parent = parentOf(root, parts, true);
  if (!parent) throw new InvalidParameterValue(`Failed to set attribute ${pythonStr(path)}: not an object on the way`);
  parent[parts.at(-1) as string] = value;
}

function extendPath(root: Record<string, unknown>, path: unknown, value: unknown, unique: unknown): void {
  const parts = pathParts(path);
  const parent = parentOf(root, parts, true);
  const key = parts.at(-1) as string;
  const current = parent?.[key] ?? [];
  if (!parent || !Array.isArray(current)) {
    throw new InvalidParameterValue(
      `Cannot extend non-list attribute ${pythonStr(path)} with value ${pythonStr(value)}`,
    );
  }
  if (!unique || !current.some((item) => JSON.stringify(item) === JSON.stringify(value))) current.push(value);
  parent[key] = current;
}

function deletePath(root: Record<string, unknown>, path: unknown): boolean {
  const parts = pathParts(path);
  const parent = parentOf(root, parts, false);
  const key = parts.at(-1) as string;
  if (!parent || !Object.hasOwn(parent, key)) return false;
  delete parent[key];
  return true;
}

/** A node's capabilities live in properties.capabilities as `k1:v1,k2:v2` (Ironic's format). */
function capabilities(subject: RuleSubject): Map<string, string> {
  const properties = (subject.node.properties ?? {}) as Record<string, unknown>;
  const text = typeof properties.capabilities === 'string' ? properties.capabilities : '';
  return new Map(
    text
      .split(',')
      .filter((pair) => pair.includes(':'))
      .map((pair) => pair.split(':', 2) as [string, string]),
  );
}

function writeCapabilities(subject: RuleSubject, caps: Map<string, string>): void {
  const properties = { ...((subject.node.properties ?? {}) as Record<string, unknown>) };
  properties.capabilities = [...caps].map(([k, v]) => `${k}:${v}`).join(',');
  subject.node.properties = properties;
}

function port(subject: RuleSubject, portId: unknown): Record<string, unknown> {
  const found = subject.ports.get(String(portId));
  if (!found) throw new InvalidParameterValue(`Port ${pythonStr(portId)} could not be found.`);
  return found;
}

const LOG_LEVELS = ['debug', 'info', 'warning', 'error', 'critical'] as const;

const action = (required: string[], optional: string[], formatted: string[], run: Action['run']): Action => ({
  required,
  optional,
  formatted,
  run,
});

/** Actions by Ironic's names (its api-call, which calls out to any URL, is not offered). */
export const ACTIONS: Readonly<Record<string, Action>> = {
  fail: action(['msg'], [], [], (_s, { msg }) => {
    throw new HardwareInspectionFailure(pythonStr(msg));
  }),
  log: action(['msg'], ['level'], ['msg'], (subject, { msg, level }) => {
    const chosen = String(level ?? 'info').toLowerCase() as (typeof LOG_LEVELS)[number];
    if (!LOG_LEVELS.includes(chosen)) {
      throw new InvalidParameterValue(`Invalid log level: ${chosen}. Choose from ${LOG_LEVELS.join(', ')}`);
    }
    subject.log(chosen, pythonStr(msg));
  }),
  'set-attribute': action(['path', 'value'], [], ['value'], (s, { path, value }) =>
    setPath(s.node, path, value, 'node'),
  ),
  'extend-attribute': action(['path', 'value'], ['unique'], ['value'], (s, { path, value, unique }) =>
    extendPath(s.node, path, value, unique),
  ),
  'del-attribute': action(['path'], [], [], (s, { path }) => {
    if (!deletePath(s.node, path)) throw new InvalidParameterValue(`Failed to delete attribute at ${pythonStr(path)}`);
  }),
  'set-capability': action(['name', 'value'], [], ['value'], (s, { name, value }) => {
    const caps = capabilities(s);
    caps.set(String(name), pythonStr(value));
    writeCapabilities(s, caps);
  }),
  'unset-capability': action(['name'], [], [], (s, { name }) => {
    const caps = capabilities(s);
    if (caps.delete(String(name))) writeCapabilities(s, caps);
  }),
  'add-trait': action(['name'], [], [], (s, { name }) => {
    s.traits.add(String(name));
  }),
  'remove-trait': action(['name'], [], [], (s, { name }) => {
    if (!s.traits.delete(String(name))) s.log('warning', `Failed to remove trait ${pythonStr(name)}: not set`);
  }),
  'set-plugin-data': action(['path', 'value'], [], ['value'], (s, { path, value }) => {
    const parts = pathParts(path);
    const parent = parentOf(s.pluginData, parts, true);
    if (!parent) throw new InvalidParameterValue(`Failed to set plugin data at ${pythonStr(path)}`);
    parent[parts.at(-1) as string] = value;
  }),
  'extend-plugin-data': action(['path', 'value'], ['unique'], ['value'], (s, { path, value, unique }) =>
    extendPath(s.pluginData, path, value, unique),
  ),
  'unset-plugin-data': action(['path'], [], [], (s, { path }) => {
    if (!deletePath(s.pluginData, path)) s.log('warning', `Path ${pythonStr(path)} not found`);
  }),
  'set-port-attribute': action(['port_id', 'path', 'value'], [], ['value'], (s, { port_id, path, value }) =>
    setPath(port(s, port_id), path, value, 'port'),
  ),
  'extend-port-attribute': action(
    ['port_id', 'path', 'value'],
    ['unique'],
    ['value'],
    (s, { port_id, path, value, unique }) => extendPath(port(s, port_id), path, value, unique),
  ),
  'del-port-attribute': action(['port_id', 'path'], [], [], (s, { port_id, path }) => {
    if (!deletePath(port(s, port_id), path)) {
      throw new InvalidParameterValue(`Failed to delete attribute at ${pythonStr(path)} of port ${pythonStr(port_id)}`);
    }
  }),
};
