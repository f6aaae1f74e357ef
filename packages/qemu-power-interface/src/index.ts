export { QEMU_OPTIONS, QemuPowerInterface, type QemuSettings, qemuPowerInterface } from './qemu-power.js';
export { QmpError, QmpSession, withQmp } from './qmp-client.js';
