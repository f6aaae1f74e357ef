import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { createTestNode } from '@bmaas/driver-api/testing';
import { describe, expect, it } from 'vitest';
import { parseIpmiDriverInfo } from './driver-info.js';

const parse = (driverInfo: Record<string, unknown>) => parseIpmiDriverInfo(createTestNode({ driverInfo }));

describe('ipmi driver_info', () => {
  it('applies upstream defaults and reads every field', () => {
    expect(parse({ ipmi_address: 'bmc-1.example' })).toEqual({
      address: 'bmc-1.example',
      port: undefined,
      username: undefined,
      password: '',
      protocolVersion: '2.0',
      privLevel: 'ADMINISTRATOR',
      cipherSuite: undefined,
      terminalPort: undefined,
    });
    expect(
      parse({
        ipmi_address: '192.0.2.5',
        ipmi_port: '6230',
        ipmi_username: 'root',
        ipmi_password: 'calvin',
        ipmi_protocol_version: '2.0',
        ipmi_priv_level: 'operator',
        ipmi_cipher_suite: 17,
        ipmi_terminal_port: 8023,
      }),
    ).toMatchObject({ port: 6230, privLevel: 'OPERATOR', cipherSuite: 17, terminalPort: 8023, password: 'calvin' });
  });

  it.each([
    [{}, MissingParameterValue, /missing driver_info\.ipmi_address/],
    [{ ipmi_address: '-oProxyCommand' }, InvalidParameterValue, /ipmi_address must be an IP address or hostname/],
    [
      { ipmi_address: 'a', ipmi_port: 70000 },
      InvalidParameterValue,
      /ipmi_port must be a whole number from 1 to 65535/,
    ],
    [{ ipmi_address: 'a', ipmi_protocol_version: '3' }, InvalidParameterValue, /"1\.5" or "2\.0"/],
    [{ ipmi_address: 'a', ipmi_priv_level: 'ROOT' }, InvalidParameterValue, /ADMINISTRATOR, CALLBACK, OPERATOR, USER/],
    [
      { ipmi_address: 'a', ipmi_cipher_suite: 18 },
      InvalidParameterValue,
      /ipmi_cipher_suite must be a whole number from 0 to 17/,
    ],
    [
      { ipmi_address: 'a', ipmi_protocol_version: '1.5', ipmi_cipher_suite: 3 },
      InvalidParameterValue,
      /only applies to ipmi_protocol_version "2\.0"/,
    ],
    [
      { ipmi_address: 'a', ipmi_terminal_port: 'x' },
      InvalidParameterValue,
      /ipmi_terminal_port must be a whole number/,
    ],
    [{ ipmi_address: 'a', ipmi_password: 7 }, InvalidParameterValue, /ipmi_password must be a string/],
  ])('refuses %j', (info, errorClass, message) => {
    expect(() => parse(info)).toThrow(errorClass);
    expect(() => parse(info)).toThrow(message);
  });
});
