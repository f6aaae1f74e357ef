import type { InterfaceType } from '@bmaas/common';
import type {
  BootInterface,
  BootInterfaceDescriptor,
  DeployInterface,
  InterfaceDescriptor,
  ManagementInterface,
  PowerInterface,
} from '@bmaas/driver-api';

/** The contract of each interface kind. */
export interface InterfaceKinds {
  boot: BootInterface;
  deploy: DeployInterface;
  power: PowerInterface;
  management: ManagementInterface;
}

/** Descriptors of the implementations of each kind; boot descriptors also say what they serve. */
export type InterfaceCatalog = {
  readonly [K in Exclude<InterfaceType, 'boot'>]: readonly InterfaceDescriptor<InterfaceKinds[K]>[];
} & { readonly boot: readonly BootInterfaceDescriptor[] };

/** A hardware type (Ironic's "driver"): the interfaces it works with. */
export interface HardwareTypeDescriptor {
  readonly name: string;
  /** Interface names per kind, preferred first: the first enabled one is the hardware type's default. */
  readonly supported: Readonly<Record<InterfaceType, readonly string[]>>;
}

/** Everything a conductor could load; configuration enables a part of it. */
export interface DriverCatalog {
  readonly interfaces: InterfaceCatalog;
  readonly hardwareTypes: readonly HardwareTypeDescriptor[];
}
