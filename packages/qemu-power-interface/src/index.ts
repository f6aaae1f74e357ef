export { QemuMachinePower } from './qemu-machine-power.js';
export { QEMU_OPTIONS, QemuPowerInterface, type QemuSettings, qemuPowerInterface } from './qemu-power.js';
export { QmpClient, type QmpConnectOptions, QmpError, type QmpEvent, type QmpStatus, withQmp } from './qmp-client.js';
