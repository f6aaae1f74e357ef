import { describe, expect, it } from 'vitest';
import { healthFromChassisStatus, healthFromSensors } from './ipmi-health.js';

const CHASSIS = `System Power         : on
Power Overload       : false
Power Interlock      : inactive
Main Power Fault     : false
Power Control Fault  : false
Power Restore Policy : always-off
Last Power Event     :
Chassis Intrusion    : inactive
Front-Panel Lockout  : inactive
Drive Fault          : false
Cooling/Fan Fault    : false
`;

describe('IPMI health', () => {
  it('reads chassis faults: power faults are Critical, drive and cooling faults a Warning', () => {
    expect(healthFromChassisStatus(CHASSIS)).toBe('OK');
    expect(
      healthFromChassisStatus(CHASSIS.replace('Drive Fault          : false', 'Drive Fault          : true')),
    ).toBe('Warning');
    expect(
      healthFromChassisStatus(CHASSIS.replace('Cooling/Fan Fault    : false', 'Cooling/Fan Fault    : true')),
    ).toBe('Warning');
    const both = CHASSIS.replace('Main Power Fault     : false', 'Main Power Fault     : true').replace(
      'Drive Fault          : false',
      'Drive Fault          : true',
    );
    expect(healthFromChassisStatus(both)).toBe('Critical');
    expect(
      healthFromChassisStatus(CHASSIS.replace('Power Overload       : false', 'Power Overload       : true')),
    ).toBe('Critical');
  });

  it('reads sensor states of sdr elist: non-critical a Warning, critical or non-recoverable Critical', () => {
    const row = (status: string) => `Temp             | 01h | ${status.padEnd(3)} |  3.1 | 45 degrees C\n`;
    const fan = 'Fan 1            | 30h | ns  |  7.1 | No Reading\n';
    expect(healthFromSensors(row('ok') + fan)).toBe('OK');
    expect(healthFromSensors('')).toBe('OK');
    for (const status of ['nc', 'unc', 'lnc']) expect(healthFromSensors(row('ok') + row(status))).toBe('Warning');
    for (const status of ['cr', 'ucr', 'lcr', 'nr', 'unr', 'lnr']) {
      expect(healthFromSensors(row('unc') + row(status))).toBe('Critical');
    }
  });

  it('reads the verbose form (ipmitool -v sdr elist) the same way', () => {
    const sensor = (status: string) => `Sensor ID              : Temp (0x1)
 Entity ID             : 3.1 (Processor)
 Sensor Type (Threshold)  : Temperature (0x01)
 Sensor Reading        : 85 (+/- 0) degrees C
 Status                : ${status}
 Nominal Reading       : 45.000
 Readable Thresholds   : unc ucr unr
`;
    expect(healthFromSensors(sensor('ok'))).toBe('OK');
    expect(healthFromSensors(sensor('Upper Non-Critical'))).toBe('Warning');
    expect(healthFromSensors(sensor('Lower Non-Critical'))).toBe('Warning');
    expect(healthFromSensors(sensor('ok') + sensor('Upper Critical'))).toBe('Critical');
    expect(healthFromSensors(sensor('Lower Non-Recoverable'))).toBe('Critical');
  });
});
