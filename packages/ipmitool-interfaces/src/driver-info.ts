import { InvalidParameterValue, MissingParameterValue, type NodeRecord } from '@bmaas/common';

/** How to reach one node's BMC, from its driver_info. */
export interface IpmiTarget {
  address: string;
  /** UDP port of the BMC (ipmitool's default, 623, when unset). */
  port: number | undefined;
  username: string | undefined;
  /** Never logged, never on a command line: it goes through a 0600 file. */
  password: string;
  protocolVersion: '1.5' | '2.0';
  privLevel: (typeof PRIV_LEVELS)[number];
  cipherSuite: number | undefined;
  /** Serial-over-LAN console port, kept for a console; not used by power or management. */
  terminalPort: number | undefined;
}

const PRIV_LEVELS = ['ADMINISTRATOR', 'CALLBACK', 'OPERATOR', 'USER'] as const;

/** driver_info keys of the ipmitool interfaces, as upstream documents them. */
export const IPMI_PROPERTIES: Readonly<Record<string, string>> = {
  ipmi_address: 'IP address or hostname of the node. Required.',
  ipmi_port: 'UDP port of the BMC. Optional (623).',
  ipmi_username: 'BMC user name. Optional (anonymous when unset).',
  ipmi_password: 'BMC password. Optional. Shown as "******" in every answer.',
  ipmi_protocol_version: 'IPMI protocol version: "1.5" (-I lan) or "2.0" (-I lanplus). Optional ("2.0").',
  ipmi_priv_level: `Privilege level of the session: ${PRIV_LEVELS.join(', ')}. Optional (ADMINISTRATOR).`,
  ipmi_cipher_suite: 'IPMI 2.0 cipher suite (-C), 0-17; 3 or 17 in practice. Optional (ipmitool probes the BMC).',
  ipmi_terminal_port: "Node's UDP port for the serial console (Serial-over-LAN). Optional; stored for a console.",
};

/** Parses and checks a node's IPMI driver_info; every problem is named with the field and the value expected. */
export function parseIpmiDriverInfo(node: NodeRecord): IpmiTarget {
  const info = node.driverInfo;
  const address = info.ipmi_address;
  if (address === undefined || address === null || address === '') {
    throw new MissingParameterValue(`Node ${node.uuid} is missing driver_info.ipmi_address (the BMC's address).`);
  }
  if (typeof address !== 'string' || !/^[A-Za-z0-9.:%_-]+$/.test(address) || address.startsWith('-')) {
    throw new InvalidParameterValue(
      `driver_info.ipmi_address must be an IP address or hostname, got ${JSON.stringify(address)}.`,
    );
  }
  const protocolVersion = optionalString(info, 'ipmi_protocol_version') ?? '2.0';
  if (protocolVersion !== '1.5' && protocolVersion !== '2.0') {
    throw new InvalidParameterValue(
      `driver_info.ipmi_protocol_version must be "1.5" or "2.0", got ${JSON.stringify(info.ipmi_protocol_version)}.`,
    );
  }
  const privLevel = (optionalString(info, 'ipmi_priv_level') ?? 'ADMINISTRATOR').toUpperCase();
  if (!(PRIV_LEVELS as readonly string[]).includes(privLevel)) {
    throw new InvalidParameterValue(
      `driver_info.ipmi_priv_level must be one of ${PRIV_LEVELS.join(', ')}, got ${JSON.stringify(info.ipmi_priv_level)}.`,
    );
  }
  const cipherSuite = optionalInteger(info, 'ipmi_cipher_suite', 0, 17);
  if (cipherSuite !== undefined && protocolVersion === '1.5') {
    throw new InvalidParameterValue('driver_info.ipmi_cipher_suite only applies to ipmi_protocol_version "2.0".');
  }
  const username = optionalString(info, 'ipmi_username');
  const password = optionalString(info, 'ipmi_password') ?? '';
  if (username !== undefined && username.length > 16) {
    throw new InvalidParameterValue('driver_info.ipmi_username is longer than the 16 characters IPMI allows.');
  }
  if (password.length > 20) {
    throw new InvalidParameterValue('driver_info.ipmi_password is longer than the 20 characters IPMI allows.');
  }
  return {
    address,
    port: optionalInteger(info, 'ipmi_port', 1, 65535),
    username,
    password,
    protocolVersion,
    privLevel: privLevel as IpmiTarget['privLevel'],
    cipherSuite,
    terminalPort: optionalInteger(info, 'ipmi_terminal_port', 1, 65535),
  };
}

/** "address:port" as messages and the per-BMC queue name a BMC. */
export function bmcName(target: Pick<IpmiTarget, 'address' | 'port'>): string {
  return `${target.address}:${target.port ?? 623}`;
}

function optionalString(info: Record<string, unknown>, key: string): string | undefined {
  const value = info[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    throw new InvalidParameterValue(`driver_info.${key} must be a string, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function optionalInteger(info: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const value = info[key];
  if (value === undefined || value === null || value === '') return undefined;
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw new InvalidParameterValue(
      `driver_info.${key} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}.`,
    );
  }
  return number;
}
