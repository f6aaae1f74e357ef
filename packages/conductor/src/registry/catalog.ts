import type { InterfaceType } from '@bmaas/common';
import type {
  BootInterface,
  DeployInterface,
  InspectInterface,
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
  inspect: InspectInterface;
}

/** Descriptors of the implementations of each kind. */
export type InterfaceCatalog = { readonly [K in InterfaceType]: readonly InterfaceDescriptor<InterfaceKinds[K]>[] };

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
