import { describe, expect, it } from 'vitest';
import type { LabMachine } from './lab-machines.js';
import { type NodeRow, nodeBody, renderTable } from './lab-nodes.js';

const machine: LabMachine = {
  name: 'lab-1',
  mac: '52:54:00:1a:b0:01',
  bmc: 'ipmi',
  bmcAddress: '127.0.0.1',
  bmcPort: 6230,
  driverInfo: { ipmi_address: '127.0.0.1', ipmi_port: 6230, ipmi_username: 'admin', ipmi_password: 'pw' },
  serialLog: '/state/lab/lab-1.serial.log',
  poweredOn: false,
  bmcPid: 42,
};

describe("a lab machine's node", () => {
  it('is of the ipmi hardware type, boots iPXE, deploys directly, skips cleaning, knows its BMC and images', () => {
    const images = { deploy_kernel: '/k', deploy_ramdisk: '/r' };
    expect(nodeBody(machine, images)).toEqual({
      name: 'lab-1',
      driver: 'ipmi',
      boot_interface: 'ipxe',
      deploy_interface: 'direct',
      power_interface: 'ipmitool',
      management_interface: 'ipmitool',
      automated_clean: false,
      driver_info: { ...machine.driverInfo, deploy_kernel: '/k', deploy_ramdisk: '/r' },
    });
  });

  it('enrols a machine behind a Redfish BMC with the redfish hardware type', () => {
    const redfish: LabMachine = {
      ...machine,
      bmc: 'redfish',
      driverInfo: { redfish_address: 'http://127.0.0.1:8000', redfish_system_id: '/redfish/v1/Systems/lab-1' },
    };
    expect(nodeBody(redfish, { deploy_kernel: '/k', deploy_ramdisk: '/r' })).toMatchObject({
      driver: 'redfish',
      power_interface: 'redfish',
      management_interface: 'redfish',
      boot_interface: 'ipxe',
      driver_info: { redfish_address: 'http://127.0.0.1:8000', deploy_kernel: '/k' },
    });
  });
});

describe('the status table', () => {
  const row = (over: Partial<NodeRow>): NodeRow => ({
    name: 'lab-1',
    uuid: '(not enrolled)',
    mac: machine.mac,
    bmc: '127.0.0.1:6230',
    conductor: '-',
    state: '-',
    power: '-',
    serialLog: '/s/lab-1.serial.log',
    ...over,
  });

  it('aligns every column to its widest cell, without trailing blanks', () => {
    const table = renderTable([
      row({}),
      row({ name: 'lab-10', uuid: 'b7c1', conductor: 'conductor-2', state: 'active', power: 'power on' }),
    ]);
    const lines = table.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^NODE {4}UUID {12}MAC {16}BMC \(IPMI\) {6}CONDUCTOR {4}STATE {3}POWER {5}SERIAL LOG$/);
    expect(lines[1]).toBe(
      'lab-1   (not enrolled)  52:54:00:1a:b0:01  127.0.0.1:6230  -            -       -         /s/lab-1.serial.log',
    );
    expect(lines[2]?.startsWith('lab-10  b7c1            ')).toBe(true);
    for (const line of lines) expect(line).toBe(line.trimEnd());
    // the column starts line up on every row
    const starts = (line: string) => [...line.matchAll(/(?<= {2})\S/g)].map((m) => m.index);
    expect(starts(lines[1] ?? '')).toEqual(starts(lines[0] ?? '').slice(0, starts(lines[1] ?? '').length));
  });

  it('is only the header without machines', () => {
    expect(renderTable([])).toBe('NODE  UUID  MAC  BMC (IPMI)  CONDUCTOR  STATE  POWER  SERIAL LOG');
  });
});
