export { QemuPowerInterface, qemuPowerInterface } from './qemu-power.js';
export { QmpError, QmpSession, withQmp } from './qmp-client.js';
