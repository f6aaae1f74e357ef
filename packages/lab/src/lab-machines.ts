// What the lab process tells its command line about each machine.

/** The kinds of BMC a lab machine can have: `ipmi` (ipmi_sim) or `redfish` (@bmaas/redfish-bmc). */
export const LAB_BMC_KINDS = ['ipmi', 'redfish'] as const;
export type LabBmcKind = (typeof LAB_BMC_KINDS)[number];

/** One lab machine: a QEMU machine behind its BMC (ipmi_sim, or a Redfish service). */
export interface LabMachine {
  name: string;
  mac: string;
  /** What the BMC speaks: the node's hardware type. */
  bmc: LabBmcKind;
  /** The BMC as the conductors reach it, and its login (driver_info of the node). */
  bmcAddress: string;
  bmcPort: number;
  driverInfo: Record<string, unknown>;
  serialLog: string;
  /** True while the machine's QEMU runs (powered on). */
  poweredOn: boolean;
  /** PID of the BMC: ipmi_sim, or the lab process that serves the Redfish BMCs. */
  bmcPid: number;
}

/** The lab as a whole. */
export interface LabDescription {
  pid: number;
  /** `netns`: a namespace with a bridge and dnsmasq; `user`: QEMU user-mode networking. */
  network: 'netns' | 'user';
  namespace: string | null;
  dnsmasqPid: number | null;
  /** The kind of BMC of every machine of this lab. */
  bmc: LabBmcKind;
  /** instance_info that deploys the lab's instance image (its URL as machines see it). */
  instanceInfo: Record<string, string>;
  machines: LabMachine[];
}
