// What the lab process tells its command line about each machine.

/** One lab machine: a QEMU machine behind its BMC (ipmi_sim). */
export interface LabMachine {
  name: string;
  mac: string;
  /** The BMC as the conductors reach it, and its login (driver_info of the node). */
  bmcAddress: string;
  bmcPort: number;
  driverInfo: Record<string, unknown>;
  serialLog: string;
  /** True while the machine's QEMU runs (powered on). */
  poweredOn: boolean;
  /** PIDs: ipmi_sim, and QEMU while powered on. */
  bmcPid: number;
}

/** The lab as a whole. */
export interface LabDescription {
  pid: number;
  /** `netns`: a namespace with a bridge and dnsmasq; `user`: QEMU user-mode networking. */
  network: 'netns' | 'user';
  namespace: string | null;
  dnsmasqPid: number | null;
  /** instance_info that deploys the lab's instance image (its URL as machines see it). */
  instanceInfo: Record<string, string>;
  machines: LabMachine[];
}
