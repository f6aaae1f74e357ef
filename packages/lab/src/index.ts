// Virtual machines for the product: a lab network (namespace, bridge, dnsmasq), QEMU machines
// behind IPMI or Redfish BMCs, the test ramdisk and instance image; shared by `npm run lab` and test/e2e.
export * from './bmc.js';
export * from './child-process.js';
export * from './dnsmasq.js';
export * from './exit-cleanup.js';
export * from './host-relay.js';
export * from './hosts.js';
export * from './image-server.js';
export * from './instance-image.js';
export * from './lab-control.js';
export * from './lab-machines.js';
export * from './lab-paths.js';
export * from './netns.js';
export * from './qemu.js';
export * from './ramdisk.js';
export * from './redfish-machine-bmc.js';
export * from './wait.js';
