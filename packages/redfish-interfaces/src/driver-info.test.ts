import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidParameterValue, MissingParameterValue, type NodeRecord } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { parseRedfishDriverInfo } from './driver-info.js';

const node = (driverInfo: Record<string, unknown>) =>
  ({ uuid: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123', driverInfo }) as unknown as NodeRecord;

describe('parseRedfishDriverInfo', () => {
  it('takes an address without a scheme as https, with the default service root', () => {
    const target = parseRedfishDriverInfo(node({ redfish_address: 'bmc.example.com:8443' }), 'auto');
    expect(target).toMatchObject({
      origin: 'https://bmc.example.com:8443',
      rootPrefix: '/redfish/v1/',
      authType: 'auto',
    });
    expect(target.verify).toEqual({ kind: 'system' });
  });

  it('keeps the scheme, an IPv6 authority and a path as the service root', () => {
    const target = parseRedfishDriverInfo(node({ redfish_address: 'http://[fd00::5]:8000/custom/v1' }), 'auto');
    expect(target).toMatchObject({ origin: 'http://[fd00::5]:8000', rootPrefix: '/custom/v1/' });
    expect(parseRedfishDriverInfo(node({ redfish_address: '[fd00::5]' }), 'auto').origin).toBe('https://[fd00::5]');
  });

  it('reads the credentials, the system, the auth type and redfish_verify_ca as upstream', () => {
    const dir = mkdtempSync(join(tmpdir(), 'redfish-ca-'));
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const target = parseRedfishDriverInfo(
      node({
        redfish_address: 'https://10.0.0.5',
        redfish_system_id: '/redfish/v1/Systems/1',
        redfish_username: 'admin',
        redfish_password: 'secret',
        redfish_verify_ca: ca,
        redfish_auth_type: 'session',
      }),
      'auto',
    );
    expect(target).toMatchObject({ systemId: '/redfish/v1/Systems/1', username: 'admin', authType: 'session' });
    expect(target.verify).toMatchObject({ kind: 'pem' });
    expect(parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_verify_ca: 'False' }), 'auto').verify).toEqual({
      kind: 'none',
    });
    expect(parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_verify_ca: false }), 'basic')).toMatchObject({
      verify: { kind: 'none' },
      authType: 'basic',
    });
    expect(parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_verify_ca: dir }), 'auto').verify).toMatchObject(
      { kind: 'pem' },
    );
  });

  it('names the field and the node of every problem', () => {
    expect(() => parseRedfishDriverInfo(node({}), 'auto')).toThrow(MissingParameterValue);
    expect(() => parseRedfishDriverInfo(node({}), 'auto')).toThrow(/redfish_address/);
    expect(() => parseRedfishDriverInfo(node({ redfish_address: 'ftp://x' }), 'auto')).toThrow(InvalidParameterValue);
    expect(() => parseRedfishDriverInfo(node({ redfish_address: 'https://' }), 'auto')).toThrow(/redfish_address/);
    expect(() =>
      parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_verify_ca: '/no/such/ca' }), 'auto'),
    ).toThrow(/redfish_verify_ca on node 1be26c0b/);
    expect(() => parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_auth_type: 'digest' }), 'auto')).toThrow(
      /"basic", "session" or "auto"/,
    );
    expect(() => parseRedfishDriverInfo(node({ redfish_address: 'x', redfish_system_id: 'a b' }), 'auto')).toThrow(
      /redfish_system_id/,
    );
  });
});
