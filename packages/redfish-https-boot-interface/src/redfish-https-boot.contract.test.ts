import { existsSync } from 'node:fs';
import { describeBootInterfaceContract } from '@bmaas/driver-api/testing';
import { createRedfishHttpsFixture } from './testing/redfish-https-fixture.js';
import { UKI_STUB } from './unified-kernel-image.js';

// Nothing served through /v1/boot (the BMC is told the artefact's URI): the rules of several
// nodes and of the modes are checked on the artefacts in redfish-https-boot.test.ts.
describeBootInterfaceContract(
  'redfish-https',
  async () => {
    if (!existsSync(UKI_STUB)) throw new Error(`${UKI_STUB} is missing: systemd-boot-efi (test/debian-packages.txt)`);
    const fixture = await createRedfishHttpsFixture();
    return {
      iface: fixture.iface,
      configName: 'boot.efi',
      node: {
        driver: 'redfish',
        bootInterface: 'redfish-https',
        bootMode: 'uefi',
        driverInfo: fixture.driverInfoOf('node-1'),
      },
      snapshot: fixture.snapshot,
      cleanup: fixture.cleanup,
    };
  },
  { getBootConfig: 'unsupported' },
);
