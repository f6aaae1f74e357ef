import { describeBootInterfaceContract } from '@bmaas/driver-api/testing';
import { grubBootInterface } from './grub-boot.js';
import { createGrubFixture } from './testing/grub-fixture.js';

describeBootInterfaceContract('grub', async () => {
  const fixture = await createGrubFixture();
  return {
    iface: fixture.iface,
    configName: 'grub.cfg',
    node: { bootInterface: 'grub', driverInfo: fixture.driverInfo },
    snapshot: fixture.snapshot,
    cleanup: fixture.cleanup,
    rootFiles: grubBootInterface.rootFiles,
    httpRoot: fixture.httpRoot,
  };
});
