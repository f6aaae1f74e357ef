import { describeBootInterfaceContract } from '@bmaas/driver-api/testing';
import { ipxeBootInterface } from './ipxe-boot.js';
import { createIpxeFixture } from './testing/ipxe-fixture.js';

describeBootInterfaceContract('ipxe', async () => {
  const fixture = await createIpxeFixture();
  return {
    iface: fixture.iface,
    configName: 'boot.ipxe',
    node: { bootInterface: 'ipxe', driverInfo: fixture.driverInfo },
    snapshot: fixture.snapshot,
    cleanup: fixture.cleanup,
    rootFiles: ipxeBootInterface.rootFiles,
    httpRoot: fixture.httpRoot,
  };
});
