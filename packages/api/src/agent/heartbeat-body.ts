import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { RamdiskMinor } from './ramdisk-version.js';

/** What an agent may send with a heartbeat, once checked. */
export interface HeartbeatBody {
  callbackUrl: string;
  agentToken: string;
  agentVersion: string | undefined;
  /** PEM of the agent's self-signed certificate (auto-TLS, >= 1.68). */
  agentVerifyCa: string | undefined;
}

/** Optional fields and the microversion that introduced each (before it, upstream refuses them). */
const VERSIONED_FIELDS: ReadonlyArray<readonly [string, number]> = [
  ['agent_version', RamdiskMinor.AGENT_VERSION],
  ['agent_verify_ca', RamdiskMinor.AGENT_VERIFY_CA],
  ['agent_status', RamdiskMinor.AGENT_STATUS],
  ['agent_status_message', RamdiskMinor.AGENT_STATUS],
];
const AGENT_STATUSES = ['start', 'end', 'error'];

/**
 * Checks a heartbeat body as upstream does, in its order: fields the
 * version does not know, the callback URL (http or https; empty is allowed,
 * a one-way agent sends that), then the token, which is required. Other
 * keys are ignored. The token itself is checked by the owning conductor.
 */
export function checkHeartbeatBody(body: unknown, minor: number): HeartbeatBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidParameterValue('The heartbeat body must be a JSON object.');
  }
  const fields = body as Record<string, unknown>;
  for (const [field, since] of VERSIONED_FIELDS) {
    if (fields[field] !== undefined && fields[field] !== null && minor < since) {
      throw new InvalidParameterValue(`Field "${field}" not recognised in this version.`);
    }
  }
  for (const field of ['callback_url', 'agent_token', ...VERSIONED_FIELDS.map(([name]) => name)]) {
    const value = fields[field];
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new InvalidParameterValue(`Field "${field}" must be a string.`);
    }
  }
  const callbackUrl = fields.callback_url as string | undefined;
  if (callbackUrl === undefined || callbackUrl === null) {
    throw new MissingParameterValue('Missing argument: "callback_url"');
  }
  if (callbackUrl !== '' && !isHttpUrl(callbackUrl)) {
    throw new InvalidParameterValue('An issue with the supplied "callback_url" has been detected.');
  }
  const agentToken = fields.agent_token as string | undefined | null;
  if (agentToken === undefined || agentToken === null) {
    throw new InvalidParameterValue('Agent token is required for heartbeat processing.');
  }
  const status = fields.agent_status as string | undefined | null;
  if (status !== undefined && status !== null && !AGENT_STATUSES.includes(status)) {
    throw new InvalidParameterValue(`Agent status is invalid. Valid states are ${AGENT_STATUSES.join(',')}.`);
  }
  return {
    callbackUrl,
    agentToken,
    agentVersion: (fields.agent_version as string | null | undefined) ?? undefined,
    agentVerifyCa: (fields.agent_verify_ca as string | null | undefined) ?? undefined,
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
