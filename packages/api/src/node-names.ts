import { InvalidParameterValue } from '@bmaas/common';
import { isUuid } from './validation.js';
import { Minor } from './versions.js';

const LOGICAL_NAME = /^[A-Za-z0-9\-._~]+$/;
/** Names before 1.10 had to be hostname-like. */
const HOSTNAME_SAFE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9\-_]{0,62}[a-z0-9])*\.?$/;
/** Path words under /v1/nodes that a node name would shadow. */
export const RESERVED_NODE_NAMES = ['detail', 'validate'];

export function isValidLogicalName(name: string, minor: number): boolean {
  if (name.length > 255) return false;
  return minor < Minor.UNRESTRICTED_NODE_NAME ? HOSTNAME_SAFE.test(name) : LOGICAL_NAME.test(name);
}

/** Node names: RFC 3986 unreserved characters (hostname-like before 1.10), not a UUID, not a reserved word. */
export function checkNodeName(name: string, minor: number, invalidMessage: string): void {
  if (!isValidLogicalName(name, minor) || isUuid(name)) throw new InvalidParameterValue(invalidMessage);
  if (RESERVED_NODE_NAMES.includes(name)) {
    throw new InvalidParameterValue(
      `The word "${name}" is reserved and can not be used as a node name. Reserved words are: ${RESERVED_NODE_NAMES.join(', ')}.`,
    );
  }
}

const CONDUCTOR_GROUP = /^[a-zA-Z0-9_\-.]*$/;

/** Conductor groups are case-insensitive: stored lower-cased. */
export function normaliseConductorGroup(group: string): string {
  if (!CONDUCTOR_GROUP.test(group)) {
    throw new InvalidParameterValue(`Expected a conductor group but received ${group}.`);
  }
  return group.toLowerCase();
}
