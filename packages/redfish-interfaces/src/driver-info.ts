import { readdirSync, readFileSync, statSync } from 'node:fs';
import { InvalidParameterValue, MissingParameterValue, type NodeRecord, type TlsVerify } from '@bmaas/common';

export type RedfishAuthType = 'basic' | 'session' | 'auto';
const AUTH_TYPES: readonly RedfishAuthType[] = ['basic', 'session', 'auto'];

/** How to reach one node's Redfish service and system, from its driver_info. */
export interface RedfishTarget {
  /** scheme://authority of the service (https when driver_info gave no scheme; IPv6 in brackets). */
  origin: string;
  /** The service root's path, ending in "/" ("/redfish/v1/" unless the address had a path). */
  rootPrefix: string;
  /** The ComputerSystem's path, or undefined: the service's only system. */
  systemId: string | undefined;
  username: string | undefined;
  /** Never logged: it goes in an Authorization header or a session request only. */
  password: string | undefined;
  verify: TlsVerify;
  /** driver_info.redfish_verify_ca as given: part of the session cache key. */
  verifySetting: string;
  authType: RedfishAuthType;
}

/** driver_info keys of the redfish interfaces, as upstream documents them. */
export const REDFISH_PROPERTIES: Readonly<Record<string, string>> = {
  redfish_address:
    'URL of the Redfish service: scheme and authority, e.g. https://bmc.example.com or https://[fd00::5]:8443; https when the scheme is left out; a path, when given, is the service root (/redfish/v1/ otherwise). Required.',
  redfish_system_id:
    'Path of the ComputerSystem to drive, e.g. /redfish/v1/Systems/1. Optional when the service has one system only.',
  redfish_username: 'BMC user name. Optional, but a BMC without one is rare.',
  redfish_password: 'BMC password. Optional. Shown as "******" in every answer, never logged.',
  redfish_verify_ca:
    'true (verify the certificate against the system CAs), false (do not verify), or the path of a CA bundle file or a directory of CA files. Optional (true).',
  redfish_auth_type: 'basic, session or auto. Optional ([redfish]auth_type).',
};

/**
 * Parses and checks a node's Redfish driver_info, as upstream's
 * parse_driver_info: every problem is named with the field and the node.
 * `defaultAuthType` is [redfish]auth_type.
 */
export function parseRedfishDriverInfo(node: NodeRecord, defaultAuthType: string): RedfishTarget {
  const info = node.driverInfo;
  const raw = info.redfish_address;
  if (raw === undefined || raw === null || raw === '') {
    throw new MissingParameterValue(
      `Missing the following Redfish properties in node ${node.uuid} driver_info: redfish_address`,
    );
  }
  const invalidAddress = () =>
    new InvalidParameterValue(
      `Invalid Redfish address ${JSON.stringify(raw)} set in driver_info/redfish_address on node ${node.uuid}`,
    );
  if (typeof raw !== 'string') throw invalidAddress();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw invalidAddress();
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '' || url.username || url.search) {
    throw invalidAddress();
  }
  const path = url.pathname === '/' || url.pathname === '' ? '/redfish/v1/' : url.pathname;
  const rootPrefix = path.endsWith('/') ? path : `${path}/`;

  const systemId = optionalString(node, 'redfish_system_id');
  if (systemId !== undefined && !/^[A-Za-z0-9._~!$&'()*+,;=:@%/-]+$/.test(systemId)) {
    throw new InvalidParameterValue(
      `Invalid value ${JSON.stringify(systemId)} set in driver_info/redfish_system_id on node ${node.uuid}. The value should be a path (string) to the resource that the driver will interact with. For example: /redfish/v1/Systems/1`,
    );
  }

  const authType = optionalString(node, 'redfish_auth_type') ?? defaultAuthType;
  if (!(AUTH_TYPES as readonly string[]).includes(authType)) {
    throw new InvalidParameterValue(
      `Invalid value ${JSON.stringify(authType)} set in driver_info/redfish_auth_type on node ${node.uuid}. The value should be one of "basic", "session" or "auto".`,
    );
  }

  const { verify, setting } = verifyOf(node);
  return {
    origin: url.origin,
    rootPrefix,
    systemId,
    username: optionalString(node, 'redfish_username'),
    password: optionalString(node, 'redfish_password'),
    verify,
    verifySetting: setting,
    authType: authType as RedfishAuthType,
  };
}

/** "origin" as messages, logs and the per-BMC limiter name a BMC. */
export function bmcName(target: Pick<RedfishTarget, 'origin'>): string {
  return target.origin;
}

const TRUE = /^(1|t|true|on|y|yes)$/i;
const FALSE = /^(0|f|false|off|n|no)$/i;

/** redfish_verify_ca: a boolean, a boolean string (strict, as oslo's), or an existing file or directory of CAs. */
function verifyOf(node: NodeRecord): { verify: TlsVerify; setting: string } {
  const value = node.driverInfo.redfish_verify_ca;
  const invalid = () =>
    new InvalidParameterValue(
      `Invalid value type set in driver_info/redfish_verify_ca on node ${node.uuid}. The value should be a Boolean or the path to a file/directory, not ${JSON.stringify(value)}`,
    );
  if (value === undefined || value === null || value === true) return { verify: { kind: 'system' }, setting: 'true' };
  if (value === false) return { verify: { kind: 'none' }, setting: 'false' };
  if (typeof value !== 'string') throw invalid();
  const stat = statOf(value);
  if (stat === 'file') return { verify: { kind: 'pem', pem: readFileSync(value, 'utf8') }, setting: value };
  if (stat === 'directory') return { verify: { kind: 'pem', pem: readCaDirectory(value) }, setting: value };
  if (TRUE.test(value.trim())) return { verify: { kind: 'system' }, setting: 'true' };
  if (FALSE.test(value.trim())) return { verify: { kind: 'none' }, setting: 'false' };
  throw invalid();
}

function statOf(path: string): 'file' | 'directory' | undefined {
  if (!path.startsWith('/')) return undefined;
  try {
    const stat = statSync(path);
    return stat.isDirectory() ? 'directory' : stat.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}

/** Every PEM certificate of the files of a directory, as one bundle. */
function readCaDirectory(dir: string): string {
  return readdirSync(dir)
    .map((name) => {
      try {
        return readFileSync(`${dir}/${name}`, 'utf8');
      } catch {
        return '';
      }
    })
    .filter((text) => text.includes('-----BEGIN CERTIFICATE-----'))
    .join('\n');
}

function optionalString(node: NodeRecord, key: string): string | undefined {
  const value = node.driverInfo[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    throw new InvalidParameterValue(
      `driver_info.${key} of node ${node.uuid} must be a string, got ${typeof value === 'number' ? value : typeof value}.`,
    );
  }
  return value;
}
