import { describe, expect, it } from 'vitest';
import { MASK, maskSecrets } from './format.js';

describe('maskSecrets', () => {
  it('masks every secret driver_info field of the hardware types, at any depth', () => {
    expect(
      maskSecrets({
        ipmi_address: '192.0.2.1',
        ipmi_username: 'admin',
        ipmi_password: 'calvin',
        redfish_password: 'x',
        ilo_password: 'x',
        drac_password: 'x',
        snmp_auth_key_passphrase: 'x',
        irmc_password: 'x',
        ipmi_kg_key_pwd: 'x',
        sys_pswd: 'x',
        agent_secret_token: 'x',
        nested: { deep: [{ chap_secret: 'x', name: 'keep' }] },
        ipmi_port: 623,
      }),
    ).toEqual({
      ipmi_address: '192.0.2.1',
      ipmi_username: 'admin',
      ipmi_password: MASK,
      redfish_password: MASK,
      ilo_password: MASK,
      drac_password: MASK,
      snmp_auth_key_passphrase: MASK,
      irmc_password: MASK,
      ipmi_kg_key_pwd: MASK,
      sys_pswd: MASK,
      agent_secret_token: MASK,
      nested: { deep: [{ chap_secret: MASK, name: 'keep' }] },
      ipmi_port: 623,
    });
  });

  it('masks secrets written inside string values and leaves other text alone', () => {
    expect(
      maskSecrets({
        image_source: 'http://img.example/disk.qcow2?token=abc123&x=1',
        kernel_append_params: 'console=ttyS0 --password hunter2 rescue_password=swordfish',
        note: 'a plain description',
      }),
    ).toEqual({
      image_source: `http://img.example/disk.qcow2?token=${MASK}&x=1`,
      kernel_append_params: `console=ttyS0 --password ${MASK} rescue_password=${MASK}`,
      note: 'a plain description',
    });
  });
});
