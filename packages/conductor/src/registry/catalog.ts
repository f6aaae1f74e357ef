import type { CoreInterfaceType, OptionalInterfaceType } from '@bmaas/common';
import type {
  BootInterface,
  BootInterfaceDescriptor,
  DeployInterface,
  InterfaceDescriptor,
  ManagementInterface,
  OptionalInterfaceKinds,
  PowerInterface,
} from '@bmaas/driver-api';

/** The contract of each interface kind. */
export interface InterfaceKinds extends OptionalInterfaceKinds {
  boot: BootInterface;
  deploy: DeployInterface;
  power: PowerInterface;
  management: ManagementInterface;
}

/**
 * Descriptors of the implementations of each kind; boot descriptors also say
 * what they serve. An optional kind left out gets OPTIONAL_INTERFACES' (its
 * generic and fake implementations).
 */
export type InterfaceCatalog = {
  readonly [K in Exclude<CoreInterfaceType, 'boot'>]: readonly InterfaceDescriptor<InterfaceKinds[K]>[];
} & { readonly boot: readonly BootInterfaceDescriptor[] } & {
  readonly [K in OptionalInterfaceType]?: readonly InterfaceDescriptor<InterfaceKinds[K]>[];
};

/** A hardware type (Ironic's "driver"): the interfaces it works with. */
export interface HardwareTypeDescriptor {
  readonly name: string;
  /**
   * Interface names per kind, preferred first: the first enabled one is the
   * hardware type's default. An optional kind left out supports only its
   * generic implementation (OPTIONAL_INTERFACE_GENERIC: no-bios, noop, …);
   * `boot` left out supports every boot interface of the catalog whose
   * descriptor declares `networkBoot` or names this hardware type in its
   * `hardwareTypes`, in catalog order.
   */
  readonly supported: Readonly<Record<Exclude<CoreInterfaceType, 'boot'>, readonly string[]>> & {
    readonly boot?: readonly string[];
  } & Readonly<Partial<Record<OptionalInterfaceType, readonly string[]>>>;
}

/** Everything a conductor could load; configuration enables a part of it. */
export interface DriverCatalog {
  readonly interfaces: InterfaceCatalog;
  readonly hardwareTypes: readonly HardwareTypeDescriptor[];
}
