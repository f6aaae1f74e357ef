import { describeBootInterfaceContract } from '@bmaas/driver-api/testing';
import { createVmediaFixture } from './testing/vmedia-fixture.js';

// No boot configuration to serve: the machine boots the ISO the BMC inserted, not a file it asks for.
describeBootInterfaceContract(
  'redfish-virtual-media',
  async () => {
    const fixture = await createVmediaFixture();
    return {
      iface: fixture.iface,
      configName: 'boot.iso',
      node: { bootInterface: 'redfish-virtual-media', driverInfo: fixture.driverInfo },
      snapshot: fixture.snapshot,
      cleanup: fixture.cleanup,
    };
  },
  { getBootConfig: 'unsupported' },
);
